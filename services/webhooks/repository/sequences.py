"""The events' numbers and the events API's reads.

Every stored event gets ``sequence``: the next number of its tenant and mode, taken from
``event_sequences`` in the transaction that stores it. The counter row stays locked until
that transaction commits, so a second batch of the same tenant and mode waits and numbers
after it: numbers become visible in order, and a reader that has seen number n never finds
a smaller one appearing later (a reader's cursor skips nothing). A number taken by a
transaction that rolls back, or by an event a concurrent transaction stored first, is never
used: numbers strictly increase but may skip.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from webhooks.models import events
from webhooks.repository.sql import seconds, texts

__all__ = ["event_sequence", "get_event", "list_events", "number_events"]

# Set-based (one round trip per batch): the events of the batch not stored yet, first copy of
# each, counted per tenant and mode; each counter moved on by its count (counters taken in
# (tenant, mode) order, so two transactions never wait for each other's in reverse); each
# event numbered from its counter's previous value, in the batch's order.
_NUMBER = text(
    """
    WITH given AS (
        SELECT * FROM unnest(:ids, :tenants, :modes) WITH ORDINALITY AS g(event_id, tenant_id, mode, ord)
    ), fresh AS (
        SELECT DISTINCT ON (g.event_id) g.event_id, g.tenant_id, g.mode, g.ord FROM given g
        WHERE NOT EXISTS (SELECT 1 FROM webhooks.events e WHERE e.event_id = g.event_id)
        ORDER BY g.event_id, g.ord
    ), counts AS (
        SELECT tenant_id, mode, count(*) AS n FROM fresh GROUP BY tenant_id, mode
    ), moved AS (
        INSERT INTO webhooks.event_sequences AS s (tenant_id, mode, last_sequence)
        SELECT tenant_id, mode, n FROM counts ORDER BY tenant_id, mode
        ON CONFLICT (tenant_id, mode) DO UPDATE SET last_sequence = s.last_sequence + excluded.last_sequence
        RETURNING s.tenant_id, s.mode, s.last_sequence
    )
    SELECT f.event_id,
           m.last_sequence - c.n + row_number() OVER (PARTITION BY f.tenant_id, f.mode ORDER BY f.ord)
               AS sequence
    FROM fresh f JOIN counts c USING (tenant_id, mode) JOIN moved m USING (tenant_id, mode)
    """
).bindparams(texts("ids"), texts("tenants"), texts("modes"))


async def number_events(session: AsyncSession, given: Sequence[tuple[str, str, str]]) -> dict[str, int]:
    """The numbers of the events ``given`` (event id, tenant id, mode; in the order they
    happened) that are not stored yet, by event id. Holds each counter's row lock until the
    caller's transaction ends: store the events in the same transaction."""
    if not given:
        return {}
    params = {
        "ids": [g[0] for g in given],
        "tenants": [g[1] for g in given],
        "modes": [g[2] for g in given],
    }
    rows = (await session.execute(_NUMBER, params)).all()
    return {r.event_id: int(r.sequence) for r in rows}


async def event_sequence(session: AsyncSession, event_id: str, tenant_id: str, mode: str) -> int | None:
    """The number of one of the tenant's events in ``mode`` (a cursor's place), or None."""
    e = events.c
    stmt = select(e.sequence).where(e.event_id == event_id, e.tenant_id == tenant_id, e.mode == mode)
    value = (await session.execute(stmt)).scalar()
    return None if value is None else int(value)


async def list_events(
    session: AsyncSession,
    tenant_id: str,
    mode: str,
    event_type: str | None,
    limit: int,
    *,
    descending: bool,
    beyond: int | None,
    kept_s: float,
) -> Sequence[Any]:
    """Up to ``limit`` events of one tenant and mode received within ``kept_s``, walked by
    sequence (``descending``: newest first) from just beyond the number ``beyond`` (index
    ``events_sequence``)."""
    e = events.c
    stmt = select(e.event_id, e.body, e.sequence).where(
        e.tenant_id == tenant_id,
        e.mode == mode,
        e.sequence.is_not(None),
        e.received_at > func.now() - seconds(kept_s),
    )
    if event_type is not None:
        stmt = stmt.where(e.type == event_type)
    if beyond is not None:
        stmt = stmt.where(e.sequence < beyond if descending else e.sequence > beyond)
    order = e.sequence.desc() if descending else e.sequence.asc()
    return (await session.execute(stmt.order_by(order).limit(limit))).all()


async def get_event(
    session: AsyncSession, event_id: str, tenant_id: str, mode: str, kept_s: float
) -> Any | None:
    e = events.c
    stmt = select(e.event_id, e.body, e.sequence).where(
        e.event_id == event_id,
        e.tenant_id == tenant_id,
        e.mode == mode,
        e.received_at > func.now() - seconds(kept_s),
    )
    return (await session.execute(stmt)).first()

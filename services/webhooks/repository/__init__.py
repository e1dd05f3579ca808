"""All webhooks SQL lives in this package, built from the tables in ``webhooks.models``.
Functions take the session; the boundary commits. Reads of endpoints and deliveries return
the models; the hot path (fan-out here, claiming and recording outcomes in ``queue``) uses
set-based Core statements over ``unnest`` arrays, one round trip per batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ARRAY,
    BigInteger,
    Integer,
    LargeBinary,
    and_,
    any_,
    bindparam,
    exists,
    func,
    or_,
    select,
    update,
)
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from common.tables import values_of
from webhooks.models import (
    WebhookAttempt,
    WebhookDelivery,
    WebhookEndpoint,
    attempts,
    deliveries,
    endpoints,
    events,
)
from webhooks.repository.outcomes import *  # noqa: F403 - the queue's halves: one namespace
from webhooks.repository.queue import *  # noqa: F403
from webhooks.repository.sequences import *  # noqa: F403 - numbering and the events API's reads
from webhooks.repository.sql import FRESH, NEW_DELIVERY_ID, seconds, texts


class Keep:
    """A setting left as it is (``change_endpoint``): None means "every event type" there."""


KEEP = Keep()

# ---- endpoints ----


async def count_endpoints_locked(session: AsyncSession, tenant_id: str, mode: str) -> int:
    """The tenant's endpoints in ``mode``, counted under a transaction-scoped advisory lock on
    (tenant, mode): two concurrent creations cannot both see room for one more."""
    await session.execute(
        select(func.pg_advisory_xact_lock(func.hashtextextended(f"webhook-endpoints:{tenant_id}:{mode}", 0)))
    )
    stmt = (
        select(func.count())
        .select_from(endpoints)
        .where(endpoints.c.tenant_id == tenant_id, endpoints.c.mode == mode, endpoints.c.deleted_at.is_(None))
    )
    return int((await session.execute(stmt)).scalar_one())


async def insert_endpoint(session: AsyncSession, endpoint: WebhookEndpoint) -> WebhookEndpoint | None:
    """``endpoint`` as stored (defaults filled in), or None when its id is taken."""
    stmt = (
        insert(WebhookEndpoint)
        .values(values_of(endpoint))
        .on_conflict_do_nothing(index_elements=["id"])
        .returning(WebhookEndpoint)
    )
    return (await session.scalars(stmt, execution_options=FRESH)).first()


async def get_endpoint(
    session: AsyncSession,
    webhook_id: str,
    tenant_id: str | None = None,
    mode: str | None = None,
    *,
    lock: bool = False,
) -> WebhookEndpoint | None:
    """The endpoint, unless it was deleted (then, to everyone, it does not exist)."""
    stmt = select(WebhookEndpoint).where(endpoints.c.id == webhook_id, endpoints.c.deleted_at.is_(None))
    if tenant_id is not None:
        stmt = stmt.where(endpoints.c.tenant_id == tenant_id, endpoints.c.mode == mode)
    if lock:
        stmt = stmt.with_for_update()
    return (await session.scalars(stmt, execution_options=FRESH)).first()


async def list_endpoints(
    session: AsyncSession, tenant_id: str, mode: str, limit: int, starting_after: str | None
) -> Sequence[WebhookEndpoint]:
    e = endpoints.c
    stmt = select(WebhookEndpoint).where(e.tenant_id == tenant_id, e.mode == mode, e.deleted_at.is_(None))
    if starting_after is not None:
        stmt = stmt.where(endpoints.c.id < starting_after)
    stmt = stmt.order_by(endpoints.c.id.desc()).limit(limit)
    return (await session.scalars(stmt, execution_options=FRESH)).all()


async def _update_endpoint(session: AsyncSession, webhook_id: str, **values: Any) -> WebhookEndpoint | None:
    stmt = (
        update(WebhookEndpoint)
        .where(endpoints.c.id == webhook_id)
        .values(**values)
        .returning(WebhookEndpoint)
        .execution_options(synchronize_session=False)
    )
    return (await session.scalars(stmt, execution_options=FRESH)).first()


async def rotate_secret(
    session: AsyncSession,
    webhook_id: str,
    secret_enc: bytes,
    retired_enc: list[bytes],
    retired_until: list[datetime],
) -> WebhookEndpoint | None:
    return await _update_endpoint(
        session,
        webhook_id,
        secret_enc=secret_enc,
        retired_secrets_enc=retired_enc,
        retired_until=retired_until,
    )


async def enable_endpoint(session: AsyncSession, webhook_id: str) -> WebhookEndpoint | None:
    """Enabled again, healthy, and looked at by the next claim."""
    return await _update_endpoint(
        session,
        webhook_id,
        enabled=True,
        disabled_reason=None,
        disabled_at=None,
        failing_since=None,
        next_due_at=func.now(),
    )


async def change_endpoint(
    session: AsyncSession, webhook_id: str, url: str | None, event_types: list[str] | Keep | None
) -> WebhookEndpoint | None:
    """A new URL (None: kept) and event types (``KEEP``: kept; None: every type)."""
    values: dict[str, Any] = {}
    if url is not None:
        values["url"] = url
    if not isinstance(event_types, Keep):
        values["enabled_events"] = event_types
    if not values:
        return await get_endpoint(session, webhook_id)
    return await _update_endpoint(session, webhook_id, **values)


async def disable_endpoint(session: AsyncSession, webhook_id: str, reason: str) -> WebhookEndpoint | None:
    """Disabled now (claimed by no worker, fanned out nothing) and its pending deliveries
    dead-lettered, as the automatic disabling does."""
    row = await _update_endpoint(
        session, webhook_id, enabled=False, disabled_at=func.now(), disabled_reason=reason, next_due_at=None
    )
    await _end_pending(session, webhook_id, "endpoint_disabled")
    return row


async def delete_endpoint(session: AsyncSession, webhook_id: str) -> WebhookEndpoint | None:
    """Deleted: disabled (when it was not already) and hidden from the partner; its pending
    deliveries end, so nothing more is sent to it. The row stays for its deliveries' history."""
    e = endpoints.c
    row = await _update_endpoint(
        session,
        webhook_id,
        enabled=False,
        deleted_at=func.now(),
        disabled_at=func.coalesce(e.disabled_at, func.now()),
        next_due_at=None,
    )
    await _end_pending(session, webhook_id, "endpoint_deleted")
    return row


async def _end_pending(session: AsyncSession, webhook_id: str, why: str) -> None:
    """The endpoint's pending deliveries become dead (an attempt already sent may still
    record its outcome). Run under the endpoint's row lock, which every claim also takes."""
    d = deliveries.c
    stmt = (
        update(deliveries)
        .where(d.webhook_id == webhook_id, d.status == "pending")
        .values(status="dead", lease_until=None, updated_at=func.now(), last_error=why)
    )
    await session.execute(stmt)


async def tenant_verified(session: AsyncSession, tenant_id: str) -> bool:
    stmt = select(exists().where(endpoints.c.tenant_id == tenant_id, endpoints.c.verified_at.is_not(None)))
    return bool((await session.execute(stmt)).scalar())


async def wake_endpoints(session: AsyncSession, webhook_ids: Sequence[str]) -> None:
    """``next_due_at = now()`` where it is later or unset: the next claim looks at them.

    The rows are locked first, in id order (two batches waking overlapping endpoints never
    deadlock), and unconditionally: a claim that holds an endpoint resets its ``next_due_at``
    from the deliveries it can see, and a wake that judged "already due" from the value before
    that claim committed left the endpoint unset with this transaction's delivery pending, never
    claimed (the rare stall of test_endpoint_failing_too_long_is_disabled_then_re_enabled).
    Waiting for the claim's lock, the update below reads what the claim wrote.
    """
    if not webhook_ids:
        return
    ids = sorted(set(webhook_ids))
    lock = (
        select(endpoints.c.id)
        .where(endpoints.c.id == func.any(texts("ids")))
        .order_by(endpoints.c.id)
        .with_for_update(key_share=True)
    )
    await session.execute(lock, {"ids": ids})
    stmt = (
        update(endpoints)
        .where(
            endpoints.c.id == func.any(texts("ids")),
            or_(endpoints.c.next_due_at.is_(None), endpoints.c.next_due_at > func.now()),
        )
        .values(next_due_at=func.now())
    )
    await session.execute(stmt, {"ids": ids})


# ---- events and fan-out ----


# fan_out's array binds and the event fields they carry
_EVENT_ARRAYS = (
    ("ids", "event_id"),
    ("tenants", "tenant_id"),
    ("modes", "mode"),
    ("types", "type"),
    ("bodies", "body"),
    ("sequences", "sequence"),
)


async def fan_out(session: AsyncSession, rows: list[dict[str, Any]], max_attempts: int) -> list[str]:
    """Store new events (numbered: ``number_events`` in the same transaction) and one delivery
    per enabled endpoint of their tenant and mode.

    An event id already stored creates nothing (a redelivered event); (event_id, webhook_id)
    is unique as a second line of defence. Returns the new delivery ids.
    """
    if not rows:
        return []
    given = (
        func.unnest(
            texts("ids"),
            texts("tenants"),
            texts("modes"),
            texts("types"),
            bindparam("bodies", type_=ARRAY(LargeBinary)),
            bindparam("sequences", type_=ARRAY(BigInteger)),
        )
        .table_valued("event_id", "tenant_id", "mode", "type", "body", "sequence")
        .render_derived(name="given")
    )
    cols = ["event_id", "tenant_id", "mode", "type", "body", "sequence"]
    stored = (
        insert(events)
        .from_select(cols, select(*(given.c[c] for c in cols)))
        .on_conflict_do_nothing(index_elements=["event_id"])
        .returning(events.c.event_id, events.c.tenant_id, events.c.mode, events.c.type)
        .cte("stored")
    )
    targets = select(
        NEW_DELIVERY_ID,
        stored.c.event_id,
        endpoints.c.id,
        stored.c.tenant_id,
        stored.c.mode,
        stored.c.type,
        bindparam("max", type_=Integer),
    ).join_from(
        stored,
        endpoints,
        and_(
            endpoints.c.tenant_id == stored.c.tenant_id,
            endpoints.c.mode == stored.c.mode,
            endpoints.c.enabled,
            or_(endpoints.c.enabled_events.is_(None), stored.c.type == any_(endpoints.c.enabled_events)),
        ),
    )
    stmt = (
        insert(deliveries)
        .from_select(
            ["id", "event_id", "webhook_id", "tenant_id", "mode", "event_type", "max_attempts"], targets
        )
        .on_conflict_do_nothing(index_elements=["event_id", "webhook_id"])
        .returning(deliveries.c.id, deliveries.c.webhook_id)
    )
    made = (
        await session.execute(
            stmt,
            {**{name: [e[column] for e in rows] for name, column in _EVENT_ARRAYS}, "max": max_attempts},
        )
    ).all()
    await wake_endpoints(session, [r.webhook_id for r in made])
    return [r.id for r in made]


# ---- operator views and actions ----


async def list_deliveries(
    session: AsyncSession,
    *,
    tenant_id: str | None,
    webhook_id: str | None,
    status: str | None,
    limit: int,
    starting_after: str | None,
) -> Sequence[WebhookDelivery]:
    c = deliveries.c
    stmt = select(WebhookDelivery)
    if tenant_id is not None:
        stmt = stmt.where(c.tenant_id == tenant_id)
    if webhook_id is not None:
        stmt = stmt.where(c.webhook_id == webhook_id)
    if status is not None:
        stmt = stmt.where(c.status == status)
    if starting_after is not None:
        stmt = stmt.where(c.id < starting_after)
    stmt = stmt.order_by(c.id.desc()).limit(limit)
    return (await session.scalars(stmt, execution_options=FRESH)).all()


async def get_delivery(
    session: AsyncSession, delivery_id: str, *, lock: bool = False
) -> WebhookDelivery | None:
    stmt = select(WebhookDelivery).where(deliveries.c.id == delivery_id)
    if lock:
        stmt = stmt.with_for_update()
    return (await session.scalars(stmt, execution_options=FRESH)).first()


_REPLAY = {
    "status": "pending",
    "next_attempt_at": func.now(),
    "lease_until": None,
    "max_attempts": deliveries.c.attempts + 1,
    "updated_at": func.now(),
}


async def replay_delivery(session: AsyncSession, delivery_id: str) -> WebhookDelivery | None:
    """A dead delivery gets one more attempt, due now."""
    stmt = (
        update(WebhookDelivery)
        .where(deliveries.c.id == delivery_id, deliveries.c.status == "dead")
        .values(**_REPLAY)
        .returning(WebhookDelivery)
        .execution_options(synchronize_session=False)
    )
    row = (await session.scalars(stmt, execution_options=FRESH)).first()
    if row is not None:
        await wake_endpoints(session, [row.webhook_id])
    return row


async def replay_dead(session: AsyncSession, webhook_id: str, since: datetime | None) -> int:
    """Every dead delivery of the endpoint (created at or after ``since``) gets one more
    attempt, due now; returns how many. Running it again replays only what died since."""
    stmt = update(deliveries).where(deliveries.c.webhook_id == webhook_id, deliveries.c.status == "dead")
    if since is not None:
        stmt = stmt.where(deliveries.c.created_at >= since)
    count = len((await session.execute(stmt.values(**_REPLAY).returning(deliveries.c.id))).all())
    if count:
        await wake_endpoints(session, [webhook_id])
    return count


async def attempts_of(session: AsyncSession, delivery_id: str) -> Sequence[WebhookAttempt]:
    stmt = select(WebhookAttempt).where(attempts.c.delivery_id == delivery_id).order_by(attempts.c.attempt)
    return (await session.scalars(stmt, execution_options=FRESH)).all()


# ---- retention ----


async def prune(session: AsyncSession, older_than_s: float, limit: int) -> tuple[int, int]:
    """Delete finished deliveries (with their attempts) and then events without deliveries,
    older than ``older_than_s``, at most ``limit`` of each; (deliveries, events) deleted.
    Pending deliveries and their events are never touched."""
    cutoff = func.now() - seconds(older_than_s)
    old = (
        select(deliveries.c.id)
        .where(deliveries.c.status != "pending", deliveries.c.updated_at < cutoff)
        .order_by(deliveries.c.updated_at)
        .limit(limit)
        .with_for_update(skip_locked=True)
        .cte("old")
    )
    gone_attempts = attempts.delete().where(attempts.c.delivery_id.in_(select(old.c.id))).cte("gone_attempts")
    stmt = (
        deliveries.delete()
        .where(deliveries.c.id.in_(select(old.c.id)))
        .returning(deliveries.c.id)
        .add_cte(gone_attempts)
    )
    n_deliveries = len((await session.execute(stmt)).all())
    orphans = (
        select(events.c.event_id)
        .where(
            events.c.received_at < cutoff,
            ~exists().where(deliveries.c.event_id == events.c.event_id),
        )
        .order_by(events.c.received_at)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    stmt2 = (
        events.delete().where(events.c.event_id.in_(orphans.scalar_subquery())).returning(events.c.event_id)
    )
    n_events = len((await session.execute(stmt2)).all())
    return n_deliveries, n_events


# ---- metrics ----


async def delivery_counts(session: AsyncSession) -> Sequence[Any]:
    """Per endpoint: pending, leased (in flight) and dead deliveries (rows: webhook_id,
    pending, leased, dead). Reads the pending and dead rows only."""
    d = deliveries.c
    pending = d.status == "pending"
    stmt = (
        select(
            d.webhook_id,
            func.count().filter(pending).label("pending"),
            func.count().filter(pending, d.lease_until >= func.now()).label("leased"),
            func.count().filter(d.status == "dead").label("dead"),
        )
        .where(d.status.in_(("pending", "dead")))
        .group_by(d.webhook_id)
    )
    return (await session.execute(stmt)).all()

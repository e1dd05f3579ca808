"""The delivery queue's SQL: claiming due deliveries per endpoint (outcomes: ``outcomes``).

A claim costs the same at 10 or 100,000 pending. It locks a few enabled endpoints whose
``next_due_at`` has come (index ``endpoints_due``, SKIP LOCKED, so workers spread over
endpoints), counts each one's leased rows (index ``deliveries_leased``: at most the in-flight
limit of entries) and walks only that endpoint's due rows (``deliveries_endpoint_due``), in one
statement with a LATERAL join. ``next_due_at`` is then reset from the same indexes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

from sqlalchemy import and_, case, func, literal, literal_column, or_, select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from common.identity import tenants as identity_tenants
from webhooks.models import attempts, deliveries, endpoints, events
from webhooks.repository.sql import ints, seconds, texts

__all__ = [
    "Claimed",
    "DueEndpoint",
    "claim",
    "due_endpoints",
    "lease_due",
    "load_claimed",
    "settle_endpoints",
]

# ---- claiming ----


@dataclass(frozen=True, slots=True)
class DueEndpoint:
    id: str
    failing: bool
    leased: int


@dataclass(frozen=True, slots=True)
class Claimed:
    """A leased delivery with what its attempt needs (endpoint URL and secrets, the body)."""

    id: str
    webhook_id: str
    event_id: str
    attempts: int
    max_attempts: int
    status: str
    leased_by: str | None  # this worker, after a claim
    url: str
    secret_enc: bytes
    retired_secrets_enc: list[bytes]  # rotated out; each verifies until its retired_until
    retired_until: list[datetime]
    body: bytes


def _due(d: Any) -> Any:
    now = func.now()
    return and_(
        d.c.status == "pending",
        d.c.next_attempt_at <= now,
        or_(d.c.lease_until.is_(None), d.c.lease_until < now),
        _tenant_active(d.c.tenant_id),
    )


UUID_TEXT = "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"


def _tenant_active(tenant_id: Any) -> Any:
    """The endpoint's tenant is not disabled: a disabled tenant's deliveries are held, claimed
    by nobody so no attempt is spent, until enable_tenant (admin writes it)."""
    t = identity_tenants.c
    as_uuid = case((tenant_id.op("~*")(UUID_TEXT), func.cast(tenant_id, t.id.type)), else_=None)
    return ~select(t.id).where(t.id == as_uuid, t.disabled_at.is_not(None)).exists()


def _leased(d: Any) -> Any:
    """A delivery in flight: pending under a lease not yet expired (index ``deliveries_leased``)."""
    return and_(d.c.status == "pending", d.c.lease_until.is_not(None), d.c.lease_until >= func.now())


def _leased_count(webhook_id: Any) -> Any:
    """Leased deliveries of one endpoint (at most the limit's worth)."""
    d = deliveries.alias("l")
    return (
        select(func.count()).select_from(d).where(d.c.webhook_id == webhook_id, _leased(d)).scalar_subquery()
    )


@cache
def _due_endpoints_statement(limit: int, per_endpoint: int) -> Any:
    """Due endpoints in fair order (docs/security.md, "Round 3"): a tenant's k-th due endpoint
    counts as ``k - 1`` endpoints' worth of deliveries (``per_endpoint`` each) on top of what
    the tenant already has in flight, least first, then the longest waiting. Ordered by waiting
    alone, a tenant with sixteen endpoints and an old backlog filled every claim, and a quiet
    tenant's new delivery waited for the whole backlog. ``FOR UPDATE`` cannot sit beside a
    window function, so the ranking is a subquery and only the endpoints returned are locked."""
    e = endpoints.c
    ranked = (
        select(
            e.id,
            e.tenant_id,
            func.row_number().over(partition_by=e.tenant_id, order_by=e.next_due_at).label("turn"),
        )
        .where(e.enabled, e.next_due_at <= func.now(), _tenant_active(e.tenant_id))
        .subquery("ranked")
    )
    mine, held = endpoints.alias("mine"), deliveries.alias("held")
    in_flight = (  # per tenant with a due endpoint: its endpoints' leased rows (deliveries_leased)
        select(mine.c.tenant_id, func.count().label("n"))
        .select_from(mine.join(held, held.c.webhook_id == mine.c.id))
        .where(mine.c.tenant_id.in_(select(ranked.c.tenant_id)), _leased(held))
        .group_by(mine.c.tenant_id)
        .subquery("in_flight")
    )
    share = func.coalesce(in_flight.c.n, 0) + (ranked.c.turn - 1) * per_endpoint
    return (
        select(e.id, e.failing_since.is_not(None).label("failing"))
        .select_from(
            endpoints.join(ranked, ranked.c.id == e.id).outerjoin(
                in_flight, in_flight.c.tenant_id == ranked.c.tenant_id
            )
        )
        .where(e.enabled, e.next_due_at <= func.now(), _tenant_active(e.tenant_id))
        .order_by(share, e.next_due_at)
        .limit(limit)
        .with_for_update(key_share=True, skip_locked=True, of=endpoints)
    )


async def due_endpoints(session: AsyncSession, limit: int, per_endpoint: int) -> list[DueEndpoint]:
    """Lock (SKIP LOCKED) up to ``limit`` enabled endpoints whose ``next_due_at`` has come, in
    fair order across tenants, with their leased count. Index ``endpoints_due``."""
    locked = {r.id: r.failing for r in await session.execute(_due_endpoints_statement(limit, per_endpoint))}
    if not locked:
        return []
    counted = await session.execute(_leased_counts_statement(), {"ids": list(locked)})
    leased: dict[str, int] = dict(counted.all())
    return [DueEndpoint(hook, failing, leased.get(hook, 0)) for hook, failing in locked.items()]


@cache
def _leased_counts_statement() -> Any:
    """Leased deliveries of the endpoints this transaction has just locked, counted in a
    statement of their own. Counted in the locking statement, they came from that statement's
    snapshot, taken before the lock was granted: a worker that had held the endpoint and
    committed its leases meanwhile was not seen, and the endpoint got more than its limit in
    flight (40 of 32 with two processes on CI). Every lease is taken under the endpoint's lock,
    so once it is held a new statement's snapshot sees them all."""
    return (
        select(deliveries.c.webhook_id, func.count())
        .where(deliveries.c.webhook_id == func.any(texts("ids")), _leased(deliveries))
        .group_by(deliveries.c.webhook_id)
    )


@cache
def _pick_per_endpoint() -> Any:
    """Ids of up to ``cap`` due deliveries of each endpoint in ``w``, locked (LATERAL, SKIP
    LOCKED)."""
    given = func.unnest(texts("w"), ints("cap")).table_valued("webhook_id", "cap").render_derived(name="e")
    d = deliveries.alias("d")
    pick = (
        select(d.c.id)
        .where(d.c.webhook_id == given.c.webhook_id, _due(d))
        .order_by(d.c.next_attempt_at)
        .limit(given.c.cap)
        .with_for_update(skip_locked=True)
        .lateral("p")
    )
    picked = select(pick.c.id).select_from(given).join(pick, literal_column("true"))
    return picked


async def lease_due(
    session: AsyncSession, caps: dict[str, int], lease_s: float, worker: str
) -> list[Claimed]:
    """For each locked endpoint, lease up to its cap of due deliveries, oldest first: an index
    range scan per endpoint (``deliveries_endpoint_due``), never a scan of the backlog."""
    if not caps:
        return []
    params = {"w": list(caps), "cap": list(caps.values())}
    return await _lease(session, _lease_due_statement(lease_s, worker), params)


async def claim(session: AsyncSession, ids: list[str], lease_s: float, worker: str) -> list[Claimed]:
    """Lease the still-due deliveries among ``ids`` (SKIP LOCKED) and open an attempt for each."""
    d = deliveries.alias("d")
    picked = select(d.c.id).where(d.c.id == func.any(texts("ids")), _due(d)).with_for_update(skip_locked=True)
    return await _lease(session, _lease_statement(picked, lease_s, worker), {"ids": ids})


@cache
def _lease_due_statement(lease_s: float, worker: str) -> Any:
    """The worker's lease statement, built once per (lease, worker): building it (aliases,
    CTEs, column proxies) cost more CPU than running it (in a profile of the delivery worker)."""
    return _lease_statement(_pick_per_endpoint(), lease_s, worker)


def _lease_statement(picked: Any, lease_s: float, worker: str) -> Any:
    """One statement: lease the picked rows (``= ANY(ARRAY(pick))``, so the planner goes by
    primary key: joined as a subquery it cannot estimate the LATERAL's rows and hashes the
    table), taking the attempt number and noting the holder; a lease that had expired was a
    lost attempt, written as ``interrupted`` with its holder (the row as it was, a self-join).
    Returns the leased rows with the endpoint's URL and secrets and the event body. A delivery
    whose last allowed attempt was lost with its worker becomes dead instead. The attempt
    itself is written when it ends (``outcomes``): no row of ``attempts`` is read here."""
    c, a = deliveries.c, attempts.c
    was = deliveries.alias("was")
    lost = c.attempts >= c.max_attempts
    leased = (
        update(deliveries)
        .where(
            c.id == func.any(func.array(picked.scalar_subquery())),
            was.c.id == c.id,
            endpoints.c.id == c.webhook_id,
            events.c.event_id == c.event_id,
        )
        .values(
            attempts=case((lost, c.attempts), else_=c.attempts + 1),
            status=case((lost, "dead"), else_=c.status),
            lease_until=case((lost, None), else_=func.now() + seconds(lease_s)),
            leased_by=literal(worker),
            leased_at=func.now(),
            last_error=case(
                (lost, "interrupted: the last attempt was lost with its worker"), else_=c.last_error
            ),
            updated_at=func.now(),
        )
        .returning(
            *_claimed_columns(),
            was.c.lease_until.label("was_leased_until"),
            was.c.leased_by.label("was_leased_by"),
            was.c.leased_at.label("was_leased_at"),
            was.c.attempts.label("was_attempt"),
        )
        .cte("leased")
    )
    lost_attempt = insert(attempts).from_select(
        ["delivery_id", "attempt", "worker", "started_at", "finished_at", "error"],
        select(
            leased.c.id,
            leased.c.was_attempt,
            func.coalesce(leased.c.was_leased_by, "unknown"),
            func.coalesce(leased.c.was_leased_at, func.now()),
            func.now(),
            literal(INTERRUPTED),
        ).where(leased.c.was_leased_until.is_not(None), leased.c.was_attempt > 0),
    )
    interrupted = lost_attempt.on_conflict_do_update(  # opened by a worker of the previous release
        index_elements=[a.delivery_id, a.attempt],
        set_={"finished_at": func.now(), "error": lost_attempt.excluded.error},
        where=a.finished_at.is_(None),
    ).cte("interrupted")
    return select(*(leased.c[col.name] for col in _claimed_columns())).add_cte(interrupted)


INTERRUPTED = "interrupted: the worker stopped before recording an outcome"


async def _lease(session: AsyncSession, statement: Any, params: dict[str, Any]) -> list[Claimed]:
    rows = await session.execute(statement, params)
    return [c for c in (Claimed(**r._mapping) for r in rows) if c.status == "pending"]


async def explain_claim(
    session: AsyncSession, webhook_id: str, cap: int, per_endpoint: int, lease_s: float
) -> list[str]:
    """``EXPLAIN ANALYZE`` of the claim's three statements for one endpoint (they run: roll
    the session back): find due endpoints, lease, reset ``next_due_at``."""
    conn = await session.connection()
    plans = []
    for stmt, params in (
        (_due_endpoints_statement(64, per_endpoint), {}),
        (_lease_statement(_pick_per_endpoint(), lease_s, "explain"), {"w": [webhook_id], "cap": [cap]}),
        (_settle_statement(per_endpoint), {"ids": [webhook_id]}),
    ):
        compiled = stmt.compile(dialect=conn.dialect)
        values = compiled.construct_params(params)
        args = tuple(values[name] for name in compiled.positiontup or ())
        rows = await conn.exec_driver_sql("EXPLAIN (ANALYZE, COSTS OFF) " + str(compiled), args)
        plans.append("\n".join(r[0] for r in rows))
    return plans


@cache
def _settle_statement(per_endpoint: int) -> Any:
    """Reset ``next_due_at`` of endpoints this transaction claimed from (and locked): the
    earliest time one of their deliveries may be claimed, which is the earliest lease expiry
    when the endpoint is at its in-flight limit (1 while failing), else also the next due row."""
    e = endpoints.c
    ls, f = deliveries.alias("ls"), deliveries.alias("f")
    min_lease = (
        select(func.min(ls.c.lease_until))
        .where(ls.c.webhook_id == e.id, ls.c.status == "pending", ls.c.lease_until.is_not(None))
        .scalar_subquery()
    )
    next_free = (
        select(func.min(f.c.next_attempt_at))
        .where(
            f.c.webhook_id == e.id,
            f.c.status == "pending",
            or_(f.c.lease_until.is_(None), f.c.lease_until < func.now()),
        )
        .scalar_subquery()
    )
    cap = case((e.failing_since.is_not(None), 1), else_=per_endpoint)
    return (
        update(endpoints)
        .where(e.id == func.any(texts("ids")))
        .values(next_due_at=func.least(case((_leased_count(e.id) >= cap, None), else_=next_free), min_lease))
    )


async def settle_endpoints(session: AsyncSession, webhook_ids: Sequence[str], per_endpoint: int) -> None:
    """Reset ``next_due_at`` of endpoints this transaction claimed from (see the statement)."""
    if webhook_ids:
        await session.execute(_settle_statement(per_endpoint), {"ids": list(webhook_ids)})


def _claimed_columns() -> tuple[Any, ...]:
    """What a worker needs of a claimed delivery: its row, its endpoint's secrets, the body."""
    c, e = deliveries.c, endpoints.c
    secrets = (e.url, e.secret_enc, e.retired_secrets_enc, e.retired_until)
    lease = (c.attempts, c.max_attempts, c.status, c.leased_by)
    return (c.id, c.webhook_id, c.event_id, *lease, *secrets, events.c.body)


async def load_claimed(session: AsyncSession, ids: list[str]) -> list[Claimed]:
    c = deliveries.c
    stmt = select(*_claimed_columns()).where(
        c.id == func.any(texts("ids")), endpoints.c.id == c.webhook_id, events.c.event_id == c.event_id
    )
    return [Claimed(**r._mapping) for r in await session.execute(stmt, {"ids": ids})]

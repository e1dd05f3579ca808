"""The delivery queue's SQL: claiming due deliveries per endpoint and recording outcomes.

Issue 12: a claim costs the same at 10 or 100,000 pending. It locks a few enabled endpoints
whose ``next_due_at`` has come (index ``endpoints_due``, SKIP LOCKED, so workers spread over
endpoints), counts each one's leased rows (index ``deliveries_leased``: at most the in-flight
limit of entries) and walks only that endpoint's due rows (``deliveries_endpoint_due``), in
one statement with a LATERAL join. ``next_due_at`` is then reset from the same indexes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, case, func, literal, literal_column, or_, select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from webhooks.models import attempts, deliveries, endpoints, events
from webhooks.repository.sql import floats, ints, seconds, texts

__all__ = [
    "Claimed",
    "Disabled",
    "DueEndpoint",
    "Finished",
    "claim",
    "due_endpoints",
    "lease_due",
    "load_claimed",
    "record_outcomes",
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
    url: str
    secret_enc: bytes
    previous_secret_enc: bytes | None
    previous_valid: bool
    body: bytes


def _due(d: Any) -> Any:
    now = func.now()
    return and_(
        d.c.status == "pending",
        d.c.next_attempt_at <= now,
        or_(d.c.lease_until.is_(None), d.c.lease_until < now),
    )


def _leased_count(webhook_id: Any) -> Any:
    """Leased deliveries of one endpoint (index ``deliveries_leased``: at most the limit's worth)."""
    d = deliveries.alias("l")
    return (
        select(func.count())
        .select_from(d)
        .where(d.c.webhook_id == webhook_id, d.c.status == "pending", d.c.lease_until >= func.now())
        .scalar_subquery()
    )


def _due_endpoints_statement(limit: int) -> Any:
    e = endpoints.c
    return (
        select(e.id, e.failing_since.is_not(None).label("failing"), _leased_count(e.id).label("leased"))
        .where(e.enabled, e.next_due_at <= func.now())
        .order_by(e.next_due_at)
        .limit(limit)
        .with_for_update(key_share=True, skip_locked=True, of=endpoints)
    )


async def due_endpoints(session: AsyncSession, limit: int) -> list[DueEndpoint]:
    """Lock (SKIP LOCKED) up to ``limit`` enabled endpoints whose ``next_due_at`` has come,
    the longest waiting first, with their leased count. Index ``endpoints_due``."""
    return [
        DueEndpoint(r.id, r.failing, r.leased) for r in await session.execute(_due_endpoints_statement(limit))
    ]


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
    return await _lease(session, _pick_per_endpoint(), params, lease_s, worker)


async def claim(session: AsyncSession, ids: list[str], lease_s: float, worker: str) -> list[Claimed]:
    """Lease the still-due deliveries among ``ids`` (SKIP LOCKED) and open an attempt for each."""
    d = deliveries.alias("d")
    picked = select(d.c.id).where(d.c.id == func.any(texts("ids")), _due(d)).with_for_update(skip_locked=True)
    return await _lease(session, picked, {"ids": ids}, lease_s, worker)


def _lease_statement(picked: Any, lease_s: float, worker: str) -> Any:
    """One statement: lease the picked rows (``= ANY(ARRAY(pick))``, so the planner goes by
    primary key: joined as a subquery it cannot estimate the LATERAL's rows and hashes the
    table), taking the attempt number; close an attempt a lost worker left open; open the new
    attempts. Returns the leased rows with the endpoint's URL and secrets and the event body.
    A delivery whose last allowed attempt was lost with its worker becomes dead instead."""
    c, a = deliveries.c, attempts.c
    lost = c.attempts >= c.max_attempts
    leased = (
        update(deliveries)
        .where(
            c.id == func.any(func.array(picked.scalar_subquery())),
            endpoints.c.id == c.webhook_id,
            events.c.event_id == c.event_id,
        )
        .values(
            attempts=case((lost, c.attempts), else_=c.attempts + 1),
            status=case((lost, "dead"), else_=c.status),
            lease_until=case((lost, None), else_=func.now() + seconds(lease_s)),
            last_error=case(
                (lost, "interrupted: the last attempt was lost with its worker"), else_=c.last_error
            ),
            updated_at=func.now(),
        )
        .returning(
            c.id,
            c.webhook_id,
            c.event_id,
            c.attempts,
            c.max_attempts,
            c.status,
            endpoints.c.url,
            endpoints.c.secret_enc,
            endpoints.c.previous_secret_enc,
            func.coalesce(endpoints.c.previous_expires_at > func.now(), False).label("previous_valid"),
            events.c.body,
        )
        .cte("leased")
    )
    live = select(leased.c.id, leased.c.attempts).where(leased.c.status == "pending").cte("live")
    closed = (
        update(attempts)
        .where(a.delivery_id == live.c.id, a.finished_at.is_(None))
        .values(finished_at=func.now(), error="interrupted: the worker stopped before recording an outcome")
        .cte("closed")
    )
    opened = (
        insert(attempts)
        .from_select(
            ["delivery_id", "attempt", "worker"], select(live.c.id, live.c.attempts, literal(worker))
        )
        .cte("opened")
    )
    return select(*leased.c).add_cte(closed).add_cte(opened)


async def _lease(
    session: AsyncSession, picked: Any, params: dict[str, Any], lease_s: float, worker: str
) -> list[Claimed]:
    rows = await session.execute(_lease_statement(picked, lease_s, worker), params)
    return [c for c in (Claimed(**r._mapping) for r in rows) if c.status == "pending"]


async def explain_claim(
    session: AsyncSession, webhook_id: str, cap: int, per_endpoint: int, lease_s: float
) -> list[str]:
    """``EXPLAIN ANALYZE`` of the claim's three statements for one endpoint (they run: roll
    the session back): find due endpoints, lease, reset ``next_due_at``."""
    conn = await session.connection()
    plans = []
    for stmt, params in (
        (_due_endpoints_statement(64), {}),
        (_lease_statement(_pick_per_endpoint(), lease_s, "explain"), {"w": [webhook_id], "cap": [cap]}),
        (_settle_statement(per_endpoint), {"ids": [webhook_id]}),
    ):
        compiled = stmt.compile(dialect=conn.dialect)
        values = compiled.construct_params(params)
        args = tuple(values[name] for name in compiled.positiontup or ())
        rows = await conn.exec_driver_sql("EXPLAIN (ANALYZE, COSTS OFF) " + str(compiled), args)
        plans.append("\n".join(r[0] for r in rows))
    return plans


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


async def load_claimed(session: AsyncSession, ids: list[str]) -> list[Claimed]:
    c = deliveries.c
    stmt = select(
        c.id,
        c.webhook_id,
        c.event_id,
        c.attempts,
        c.max_attempts,
        c.status,
        endpoints.c.url,
        endpoints.c.secret_enc,
        endpoints.c.previous_secret_enc,
        func.coalesce(endpoints.c.previous_expires_at > func.now(), False).label("previous_valid"),
        events.c.body,
    ).where(c.id == func.any(texts("ids")), endpoints.c.id == c.webhook_id, events.c.event_id == c.event_id)
    return [Claimed(**r._mapping) for r in await session.execute(stmt, {"ids": ids})]


# ---- recording outcomes, one batch per transaction ----


@dataclass(frozen=True, slots=True)
class Finished:
    """The outcome of one attempt. ``retry_in_s`` None on a failure: the delivery is dead."""

    delivery_id: str
    attempt: int
    webhook_id: str
    status_code: int | None
    latency_ms: int
    error: str | None
    ok: bool
    retry_in_s: float | None


@dataclass(frozen=True, slots=True)
class Disabled:
    id: str
    tenant_id: str
    mode: str
    url: str
    failing_since: Any
    disabled_at: Any


async def record_outcomes(
    session: AsyncSession, done: Sequence[Finished], disable_after_s: float
) -> tuple[int, list[Disabled]]:
    """Close the attempts, move the deliveries on (succeeded, retry later, or dead) and note
    each endpoint's health: two statements for the whole batch (more only to disable). An
    endpoint with no success for ``disable_after_s`` is disabled and its pending deliveries
    dead-lettered; returns (deliveries moved, endpoints disabled by this call)."""
    if not done:
        return 0, []
    a, d, e = attempts.c, deliveries.c, endpoints.c
    params = {
        "ids": [f.delivery_id for f in done],
        "nums": [f.attempt for f in done],
        "codes": [f.status_code for f in done],
        "lats": [f.latency_ms for f in done],
        "errs": [f.error for f in done],
        "oks": ["t" if f.ok else "" for f in done],
        "retry": [f.retry_in_s for f in done],
    }
    v = (
        func.unnest(
            texts("ids"),
            ints("nums"),
            ints("codes"),
            ints("lats"),
            texts("errs"),
            texts("oks"),
            floats("retry"),
        )
        .table_valued("id", "n", "code", "lat", "err", "ok", "retry")
        .render_derived(name="v")
    )
    closed = (
        update(attempts)
        .where(a.delivery_id == v.c.id, a.attempt == v.c.n)
        .values(finished_at=func.now(), status_code=v.c.code, latency_ms=v.c.lat, error=v.c.err)
        .cte("closed")
    )
    ok = v.c.ok == "t"
    moved = await session.execute(
        update(deliveries)
        .where(
            d.id == v.c.id,
            d.attempts == v.c.n,
            or_(d.status == "pending", and_(ok, d.status != "succeeded")),
        )
        .values(
            status=case((ok, "succeeded"), (v.c.retry.is_(None), "dead"), else_="pending"),
            lease_until=None,
            last_status_code=v.c.code,
            last_error=case((ok, None), else_=v.c.err),
            next_attempt_at=case(
                (or_(ok, v.c.retry.is_(None)), d.next_attempt_at),
                else_=func.now() + v.c.retry * literal_column("interval '1 second'"),
            ),
            updated_at=func.now(),
        )
        .returning(d.id)
        .add_cte(closed),  # the attempts are closed by the same statement
        params,
    )
    n_moved = len(moved.all())
    healthy = sorted({f.webhook_id for f in done if f.ok})
    failing = sorted({f.webhook_id for f in done} - set(healthy))
    # Every endpoint of the batch freed slots: the next claim looks at it again.
    locked = select(e.id).where(e.id == func.any(texts("all"))).order_by(e.id).with_for_update(key_share=True)
    is_ok = e.id == func.any(texts("ok"))
    await session.execute(
        update(endpoints)
        .where(e.id.in_(locked.scalar_subquery()))
        .values(
            next_due_at=func.now(),
            last_success_at=case((is_ok, func.now()), else_=e.last_success_at),
            verified_at=case((is_ok, func.coalesce(e.verified_at, func.now())), else_=e.verified_at),
            failing_since=case((is_ok, None), else_=func.coalesce(e.failing_since, func.now())),
        ),
        {"all": sorted(set(healthy) | set(failing)), "ok": healthy},
    )
    if not failing:
        return n_moved, []
    gone = await session.execute(
        update(endpoints)
        .where(
            e.id == func.any(texts("ids")),
            e.enabled,
            e.failing_since < func.now() - seconds(disable_after_s),
        )
        .values(
            enabled=False, disabled_at=func.now(), disabled_reason="failing_without_success", next_due_at=None
        )
        .returning(e.id, e.tenant_id, e.mode, e.url, e.failing_since, e.disabled_at),
        {"ids": failing},
    )
    disabled = [Disabled(**r._mapping) for r in gone]
    if disabled:
        await session.execute(
            update(deliveries)
            .where(d.webhook_id == func.any(texts("ids")), d.status == "pending")
            .values(
                status="dead",
                lease_until=None,
                updated_at=func.now(),
                last_error=func.coalesce(d.last_error, "endpoint_disabled"),
            ),
            {"ids": [x.id for x in disabled]},
        )
    return n_moved, disabled

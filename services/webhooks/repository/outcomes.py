"""The delivery queue's SQL, second half: recording a batch of outcomes in one transaction
(the attempts closed, the deliveries moved on, the endpoints' health), and disabling an
endpoint failing for too long. Statements built once from the tables."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

from sqlalchemy import and_, case, func, literal_column, or_, select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from webhooks.models import attempts, deliveries, endpoints
from webhooks.repository.sql import floats, ints, seconds, stamps, texts

__all__ = ["Disabled", "Finished", "record_outcomes"]


@dataclass(frozen=True, slots=True)
class Finished:
    """The outcome of one attempt. ``retry_in_s`` None on a failure: the delivery is dead."""

    delivery_id: str
    attempt: int
    webhook_id: str
    worker: str
    started_at: datetime
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


@cache
def _record_statement() -> Any:
    """Write a batch's attempts and move its deliveries on (succeeded, retry later, or dead),
    in one statement over the unnested outcomes; returns the deliveries moved. Built once.

    The attempts are inserted (nothing of ``attempts`` is read: a lookup there was the record's
    cost). An attempt already written as ``interrupted`` (its lease expired and was taken over
    before this outcome came) gets the outcome: it was sent after all. A delivery moves only
    while the attempt is its latest one."""
    a, d = attempts.c, deliveries.c
    v = (
        func.unnest(
            texts("ids"),
            ints("nums"),
            texts("workers"),
            stamps("started"),
            ints("codes"),
            ints("lats"),
            texts("errs"),
            texts("oks"),
            floats("retry"),
        )
        .table_valued("id", "n", "worker", "started", "code", "lat", "err", "ok", "retry")
        .render_derived(name="v")
    )
    row = insert(attempts).from_select(
        [
            "delivery_id",
            "attempt",
            "worker",
            "started_at",
            "finished_at",
            "status_code",
            "latency_ms",
            "error",
        ],
        select(v.c.id, v.c.n, v.c.worker, v.c.started, func.now(), v.c.code, v.c.lat, v.c.err),
    )
    closed = row.on_conflict_do_update(
        index_elements=[a.delivery_id, a.attempt],
        set_={
            "finished_at": row.excluded.finished_at,
            "status_code": row.excluded.status_code,
            "latency_ms": row.excluded.latency_ms,
            "error": row.excluded.error,
        },
    ).cte("closed")
    ok = v.c.ok == "t"
    return (
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
        .add_cte(closed)  # the attempts are written by the same statement
        .add_cte(_health().cte("health"))  # and the endpoints' health: one round trip
    )


def _health() -> Any:
    """Every endpoint of a batch freed slots (the next claim looks at it again) and notes its
    health: a success clears ``failing_since``, a failure starts it. Locks in id order."""
    e = endpoints.c
    locked = select(e.id).where(e.id == func.any(texts("all"))).order_by(e.id).with_for_update(key_share=True)
    is_ok = e.id == func.any(texts("ok"))
    return (
        update(endpoints)
        .where(e.id.in_(locked.scalar_subquery()))
        .values(
            next_due_at=func.now(),
            last_success_at=case((is_ok, func.now()), else_=e.last_success_at),
            verified_at=case((is_ok, func.coalesce(e.verified_at, func.now())), else_=e.verified_at),
            failing_since=case((is_ok, None), else_=func.coalesce(e.failing_since, func.now())),
        )
    )


async def record_outcomes(
    session: AsyncSession, done: Sequence[Finished], disable_after_s: float
) -> tuple[int, list[Disabled]]:
    """Write the attempts, move the deliveries on (succeeded, retry later, or dead) and note
    each endpoint's health: one statement for the whole batch (more only to disable). An
    endpoint with no success for ``disable_after_s`` is disabled and its pending deliveries
    dead-lettered; returns (deliveries moved, endpoints disabled by this call)."""
    if not done:
        return 0, []
    params = {
        "ids": [f.delivery_id for f in done],
        "nums": [f.attempt for f in done],
        "workers": [f.worker for f in done],
        "started": [f.started_at for f in done],
        "codes": [f.status_code for f in done],
        "lats": [f.latency_ms for f in done],
        "errs": [f.error for f in done],
        "oks": ["t" if f.ok else "" for f in done],
        "retry": [f.retry_in_s for f in done],
    }
    healthy = sorted({f.webhook_id for f in done if f.ok})
    failing = sorted({f.webhook_id for f in done} - set(healthy))
    params |= {"all": sorted(set(healthy) | set(failing)), "ok": healthy}
    n_moved = len((await session.execute(_record_statement(), params)).all())
    if not failing:
        return n_moved, []
    d, e = deliveries.c, endpoints.c
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

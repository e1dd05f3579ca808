"""All webhooks SQL lives here. Functions take the session; the boundary commits."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

# A sortable id made in SQL (same shape as common.ids.new_id: ms timestamp + random hex).
_NEW_DELIVERY_ID = (
    "'dlv_' || lpad(to_hex(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint), 12, '0')"
    " || substr(replace(gen_random_uuid()::text, '-', ''), 1, 20)"
)

_DUE = (
    "d.status = 'pending' AND d.next_attempt_at <= now() AND (d.lease_until IS NULL OR d.lease_until < now())"
)


# ---- endpoints ----


async def insert_endpoint(
    session: AsyncSession, *, webhook_id: str, tenant_id: str, mode: str, url: str, secret_enc: bytes
) -> Any:
    return (
        await session.execute(
            text(
                "INSERT INTO webhooks.endpoints (id, tenant_id, mode, url, secret_enc)"
                " VALUES (:id, :t, :m, :url, :s) ON CONFLICT (id) DO NOTHING RETURNING *"
            ),
            {"id": webhook_id, "t": tenant_id, "m": mode, "url": url, "s": secret_enc},
        )
    ).first()


async def get_endpoint(
    session: AsyncSession,
    webhook_id: str,
    tenant_id: str | None = None,
    mode: str | None = None,
    *,
    lock: bool = False,
) -> Any:
    sql = "SELECT * FROM webhooks.endpoints WHERE id = :id"
    if tenant_id is not None:
        sql += " AND tenant_id = :t AND mode = :m"
    if lock:
        sql += " FOR UPDATE"
    return (await session.execute(text(sql), {"id": webhook_id, "t": tenant_id, "m": mode})).first()


async def list_endpoints(
    session: AsyncSession, tenant_id: str, mode: str, limit: int, starting_after: str | None
) -> Sequence[Any]:
    return (
        await session.execute(
            text(
                "SELECT * FROM webhooks.endpoints WHERE tenant_id = :t AND mode = :m"
                " AND (CAST(:after AS text) IS NULL OR id < :after) ORDER BY id DESC LIMIT :lim"
            ),
            {"t": tenant_id, "m": mode, "after": starting_after, "lim": limit},
        )
    ).all()


async def rotate_secret(
    session: AsyncSession, webhook_id: str, secret_enc: bytes, previous_enc: bytes, grace_s: float
) -> Any:
    return (
        await session.execute(
            text(
                "UPDATE webhooks.endpoints SET secret_enc = :s, previous_secret_enc = :p,"
                " previous_expires_at = now() + make_interval(secs => :g)"
                " WHERE id = :id RETURNING *"
            ),
            {"id": webhook_id, "s": secret_enc, "p": previous_enc, "g": grace_s},
        )
    ).first()


async def enable_endpoint(session: AsyncSession, webhook_id: str) -> Any:
    return (
        await session.execute(
            text(
                "UPDATE webhooks.endpoints SET enabled = true, disabled_reason = NULL,"
                " disabled_at = NULL, failing_since = NULL WHERE id = :id RETURNING *"
            ),
            {"id": webhook_id},
        )
    ).first()


async def tenant_verified(session: AsyncSession, tenant_id: str) -> bool:
    row = (
        await session.execute(
            text(
                "SELECT EXISTS (SELECT 1 FROM webhooks.endpoints"
                " WHERE tenant_id = :t AND verified_at IS NOT NULL) AS v"
            ),
            {"t": tenant_id},
        )
    ).one()
    return bool(row.v)


async def mark_success(session: AsyncSession, webhook_id: str) -> None:
    await session.execute(
        text(
            "UPDATE webhooks.endpoints SET last_success_at = now(), failing_since = NULL,"
            " verified_at = coalesce(verified_at, now()) WHERE id = :id"
        ),
        {"id": webhook_id},
    )


async def mark_failure(session: AsyncSession, webhook_id: str, disable_after_s: float) -> bool:
    """Note a failure; disable the endpoint if it has failed without success for too long.

    Returns True when this call disabled it (its pending deliveries are then dead-lettered).
    """
    await session.execute(
        text("UPDATE webhooks.endpoints SET failing_since = coalesce(failing_since, now()) WHERE id = :id"),
        {"id": webhook_id},
    )
    row = (
        await session.execute(
            text(
                "UPDATE webhooks.endpoints SET enabled = false, disabled_at = now(),"
                " disabled_reason = 'failing_without_success'"
                " WHERE id = :id AND enabled AND failing_since < now() - make_interval(secs => :s)"
                " RETURNING id"
            ),
            {"id": webhook_id, "s": disable_after_s},
        )
    ).first()
    if row is None:
        return False
    await session.execute(
        text(
            "UPDATE webhooks.deliveries SET status = 'dead', lease_until = NULL, updated_at = now(),"
            " last_error = coalesce(last_error, 'endpoint_disabled')"
            " WHERE webhook_id = :id AND status = 'pending'"
        ),
        {"id": webhook_id},
    )
    return True


# ---- events and fan-out ----


async def fan_out(session: AsyncSession, events: list[dict[str, Any]], max_attempts: int) -> list[str]:
    """Store new events and one delivery per enabled endpoint of their tenant and mode.

    An event id already stored creates nothing (a redelivered event); (event_id, webhook_id)
    is unique as a second line of defence. Returns the new delivery ids.
    """
    if not events:
        return []
    rows = await session.execute(
        text(
            "WITH ins AS ("
            " INSERT INTO webhooks.events (event_id, tenant_id, mode, type, body)"
            " SELECT * FROM unnest(CAST(:ids AS text[]), CAST(:tenants AS text[]),"
            "  CAST(:modes AS text[]), CAST(:types AS text[]), CAST(:bodies AS bytea[]))"
            " ON CONFLICT (event_id) DO NOTHING RETURNING event_id, tenant_id, mode, type)"
            " INSERT INTO webhooks.deliveries"
            " (id, event_id, webhook_id, tenant_id, mode, event_type, max_attempts)"
            f" SELECT {_NEW_DELIVERY_ID}, ins.event_id, e.id, ins.tenant_id, ins.mode, ins.type, :max"
            " FROM ins JOIN webhooks.endpoints e"
            "  ON e.tenant_id = ins.tenant_id AND e.mode = ins.mode AND e.enabled"
            " ON CONFLICT (event_id, webhook_id) DO NOTHING RETURNING id"
        ),
        {
            "ids": [e["event_id"] for e in events],
            "tenants": [e["tenant_id"] for e in events],
            "modes": [e["mode"] for e in events],
            "types": [e["type"] for e in events],
            "bodies": [e["body"] for e in events],
            "max": max_attempts,
        },
    )
    return [r.id for r in rows]


# ---- claiming and recording attempts ----


async def due_candidates(session: AsyncSession, per_endpoint: int, scan: int) -> Sequence[Any]:
    """Due deliveries, oldest first (no locks), leaving each endpoint at most ``per_endpoint``
    leased deliveries across all workers, so one slow endpoint cannot take every slot."""
    return (
        await session.execute(
            text(
                "SELECT id, webhook_id FROM ("
                " SELECT d.id, d.webhook_id, d.next_attempt_at, row_number() OVER"
                "  (PARTITION BY d.webhook_id ORDER BY d.next_attempt_at) AS rn"
                " FROM webhooks.deliveries d JOIN webhooks.endpoints e ON e.id = d.webhook_id"
                f" WHERE {_DUE} AND e.enabled) c"
                " WHERE rn + (SELECT count(*) FROM webhooks.deliveries l WHERE l.webhook_id = c.webhook_id"
                "  AND l.status = 'pending' AND l.lease_until >= now()) <= :per"
                " ORDER BY next_attempt_at LIMIT :scan"
            ),
            {"per": per_endpoint, "scan": scan},
        )
    ).all()


async def claim(session: AsyncSession, ids: list[str], lease_s: float, worker: str) -> Sequence[Any]:
    """Lease the still-due deliveries among ``ids`` (SKIP LOCKED) and open an attempt for each.

    The attempt number is taken here, in the claiming transaction, so each number is sent at
    most once: an attempt interrupted by a crash is closed as such when its lease is taken over.
    """
    # A delivery whose last allowed attempt was lost with its worker is dead, not retried forever.
    await session.execute(
        text(
            "UPDATE webhooks.deliveries d SET status = 'dead', lease_until = NULL, updated_at = now(),"
            " last_error = 'interrupted: the last attempt was lost with its worker'"
            f" WHERE d.id = ANY(:ids) AND {_DUE} AND d.attempts >= d.max_attempts"
        ),
        {"ids": ids},
    )
    claimed = (
        await session.execute(
            text(
                "UPDATE webhooks.deliveries d SET attempts = d.attempts + 1, updated_at = now(),"
                " lease_until = now() + make_interval(secs => :lease)"
                " WHERE d.id IN (SELECT d.id FROM webhooks.deliveries d"
                f"  WHERE d.id = ANY(:ids) AND {_DUE} FOR UPDATE SKIP LOCKED)"
                " RETURNING d.id, d.attempts"
            ),
            {"ids": ids, "lease": lease_s},
        )
    ).all()
    if not claimed:
        return []
    got = [r.id for r in claimed]
    await session.execute(
        text(
            "UPDATE webhooks.attempts SET finished_at = now(),"
            " error = 'interrupted: the worker stopped before recording an outcome'"
            " WHERE delivery_id = ANY(:ids) AND finished_at IS NULL"
        ),
        {"ids": got},
    )
    await session.execute(
        text(
            "INSERT INTO webhooks.attempts (delivery_id, attempt, worker)"
            " SELECT * FROM unnest(CAST(:ids AS text[]), CAST(:nums AS int[]), CAST(:w AS text[]))"
        ),
        {"ids": got, "nums": [r.attempts for r in claimed], "w": [worker] * len(got)},
    )
    return await load_claimed(session, got)


async def load_claimed(session: AsyncSession, ids: list[str]) -> Sequence[Any]:
    return (
        await session.execute(
            text(
                "SELECT d.id, d.webhook_id, d.event_id, d.attempts, d.max_attempts, d.status,"
                " e.url, e.secret_enc, e.previous_secret_enc,"
                " (e.previous_expires_at > now()) AS previous_valid, ev.body"
                " FROM webhooks.deliveries d JOIN webhooks.endpoints e ON e.id = d.webhook_id"
                " JOIN webhooks.events ev ON ev.event_id = d.event_id WHERE d.id = ANY(:ids)"
            ),
            {"ids": ids},
        )
    ).all()


async def finish_attempt(
    session: AsyncSession,
    delivery_id: str,
    attempt: int,
    status_code: int | None,
    latency_ms: int,
    error: str | None,
) -> None:
    await session.execute(
        text(
            "UPDATE webhooks.attempts SET finished_at = now(), status_code = :code,"
            " latency_ms = :lat, error = :err WHERE delivery_id = :id AND attempt = :n"
        ),
        {"id": delivery_id, "n": attempt, "code": status_code, "lat": latency_ms, "err": error},
    )


async def delivery_succeeded(session: AsyncSession, delivery_id: str, attempt: int, status_code: int) -> bool:
    row = (
        await session.execute(
            text(
                "UPDATE webhooks.deliveries SET status = 'succeeded', lease_until = NULL,"
                " last_status_code = :code, last_error = NULL, updated_at = now()"
                " WHERE id = :id AND attempts = :n AND status <> 'succeeded' RETURNING id"
            ),
            {"id": delivery_id, "n": attempt, "code": status_code},
        )
    ).first()
    return row is not None


async def delivery_failed(
    session: AsyncSession,
    delivery_id: str,
    attempt: int,
    status_code: int | None,
    error: str,
    retry_in_s: float | None,
) -> bool:
    """Schedule the next attempt, or dead-letter when ``retry_in_s`` is None."""
    row = (
        await session.execute(
            text(
                "UPDATE webhooks.deliveries SET lease_until = NULL, updated_at = now(),"
                " last_status_code = :code, last_error = :err,"
                " status = CASE WHEN CAST(:retry AS float8) IS NULL THEN 'dead' ELSE 'pending' END,"
                " next_attempt_at = CASE WHEN CAST(:retry AS float8) IS NULL THEN next_attempt_at"
                "  ELSE now() + make_interval(secs => CAST(:retry AS float8)) END"
                " WHERE id = :id AND attempts = :n AND status = 'pending' RETURNING id"
            ),
            {"id": delivery_id, "n": attempt, "code": status_code, "err": error, "retry": retry_in_s},
        )
    ).first()
    return row is not None


# ---- operator views ----


async def list_deliveries(
    session: AsyncSession,
    *,
    tenant_id: str | None,
    webhook_id: str | None,
    status: str | None,
    limit: int,
    starting_after: str | None,
) -> Sequence[Any]:
    return (
        await session.execute(
            text(
                "SELECT * FROM webhooks.deliveries WHERE"
                " (CAST(:t AS text) IS NULL OR tenant_id = :t)"
                " AND (CAST(:w AS text) IS NULL OR webhook_id = :w)"
                " AND (CAST(:s AS text) IS NULL OR status = :s)"
                " AND (CAST(:after AS text) IS NULL OR id < :after)"
                " ORDER BY id DESC LIMIT :lim"
            ),
            {"t": tenant_id, "w": webhook_id, "s": status, "after": starting_after, "lim": limit},
        )
    ).all()


async def get_delivery(session: AsyncSession, delivery_id: str, *, lock: bool = False) -> Any:
    sql = "SELECT * FROM webhooks.deliveries WHERE id = :id" + (" FOR UPDATE" if lock else "")
    return (await session.execute(text(sql), {"id": delivery_id})).first()


async def replay_delivery(session: AsyncSession, delivery_id: str) -> Any:
    """A dead delivery gets one more attempt, due now."""
    return (
        await session.execute(
            text(
                "UPDATE webhooks.deliveries SET status = 'pending', next_attempt_at = now(),"
                " lease_until = NULL, max_attempts = attempts + 1, updated_at = now()"
                " WHERE id = :id AND status = 'dead' RETURNING *"
            ),
            {"id": delivery_id},
        )
    ).first()


async def attempts_of(session: AsyncSession, delivery_id: str) -> Sequence[Any]:
    return (
        await session.execute(
            text("SELECT * FROM webhooks.attempts WHERE delivery_id = :id ORDER BY attempt"),
            {"id": delivery_id},
        )
    ).all()


# ---- retention ----


async def prune(session: AsyncSession, older_than_s: float, limit: int) -> tuple[int, int]:
    """Delete finished deliveries (with their attempts) and then events without deliveries,
    older than ``older_than_s``, at most ``limit`` of each; (deliveries, events) deleted.
    Pending deliveries and their events are never touched."""
    deliveries = (
        await session.execute(
            text(
                "WITH old AS (SELECT id FROM webhooks.deliveries WHERE status <> 'pending'"
                "  AND updated_at < now() - make_interval(secs => :age)"
                "  ORDER BY updated_at LIMIT :limit FOR UPDATE SKIP LOCKED),"
                " gone_attempts AS (DELETE FROM webhooks.attempts WHERE delivery_id IN"
                "  (SELECT id FROM old))"
                " DELETE FROM webhooks.deliveries WHERE id IN (SELECT id FROM old) RETURNING id"
            ),
            {"age": older_than_s, "limit": limit},
        )
    ).all()
    events = (
        await session.execute(
            text(
                "DELETE FROM webhooks.events WHERE event_id IN (SELECT e.event_id FROM webhooks.events e"
                "  WHERE e.received_at < now() - make_interval(secs => :age) AND NOT EXISTS"
                "  (SELECT 1 FROM webhooks.deliveries d WHERE d.event_id = e.event_id)"
                "  ORDER BY e.received_at LIMIT :limit FOR UPDATE SKIP LOCKED) RETURNING event_id"
            ),
            {"age": older_than_s, "limit": limit},
        )
    ).all()
    return len(deliveries), len(events)

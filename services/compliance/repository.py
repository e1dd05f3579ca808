"""All compliance SQL lives here. Batch reads and writes take one round trip each."""

from __future__ import annotations

import json
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

Key = tuple[str, str, str]  # (tenant_id, mode, id)


async def _driver(session: AsyncSession) -> Any:
    """The asyncpg connection under the session's transaction (for unnest batch statements)."""
    conn = await session.connection()
    raw = await conn.get_raw_connection()
    return raw.driver_connection


# ---- decisions (also the inbox) ----


async def stored_outcomes(session: AsyncSession, command_ids: list[str]) -> dict[str, Any]:
    if not command_ids:
        return {}
    rows = await session.execute(
        text(
            "SELECT command_id, out_topic, out_key, out_partition, out_payload"
            " FROM compliance.decisions WHERE command_id = ANY(:ids)"
        ),
        {"ids": command_ids},
    )
    return {r.command_id: r for r in rows}


async def insert_decisions(session: AsyncSession, rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    db = await _driver(session)
    cols = [
        "id",
        "command_id",
        "request_id",
        "tenant_id",
        "mode",
        "command_type",
        "outcome",
        "rule",
        "reason",
    ]
    await db.execute(
        "INSERT INTO compliance.decisions (id, command_id, request_id, tenant_id, mode, command_type,"
        " outcome, rule, reason, inputs, out_topic, out_key, out_partition, out_payload)"
        " SELECT u.id, u.command_id, u.request_id, u.tenant_id, u.mode, u.command_type, u.outcome,"
        " u.rule, u.reason, u.inputs::jsonb, u.out_topic, u.out_key, u.out_partition, u.out_payload"
        " FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],"
        " $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::bytea[], $13::int[],"
        " $14::bytea[]) AS u(id, command_id, request_id, tenant_id, mode, command_type, outcome, rule,"
        " reason, inputs, out_topic, out_key, out_partition, out_payload)"
        " ON CONFLICT (command_id) DO NOTHING",
        *[[r[c] for r in rows] for c in cols],
        [json.dumps(r["inputs"], default=str) for r in rows],
        [r["out_topic"] for r in rows],
        [r["out_key"] for r in rows],
        [r["out_partition"] for r in rows],
        [r["out_payload"] for r in rows],
    )


async def list_decisions(
    session: AsyncSession, tenant_id: str | None, starting_after: str | None, limit: int
) -> list[Any]:
    where: list[str] = []
    params: dict[str, Any] = {"limit": limit}
    if tenant_id is not None:
        where.append("d.tenant_id = :t")
        params["t"] = tenant_id
    if starting_after is not None:
        where.append(
            "(d.created_at, d.id) < (SELECT c.created_at, c.id FROM compliance.decisions c"
            " WHERE c.id = :after)"
        )
        params["after"] = starting_after
    sql = (
        "SELECT d.id, d.request_id, d.command_id, d.tenant_id, d.mode, d.command_type, d.outcome,"
        " d.rule, d.reason, d.inputs, d.created_at FROM compliance.decisions d"
        + (" WHERE " + " AND ".join(where) if where else "")
        + " ORDER BY d.created_at DESC, d.id DESC LIMIT :limit"
    )
    return list(await session.execute(text(sql), params))


# ---- party registry ----


async def insert_parties(
    session: AsyncSession, rows: list[tuple[str, str, str, str, str | None, str | None]]
) -> None:
    """(tenant_id, mode, party_id, kind, customer_id, country_code); the first record wins."""
    if not rows:
        return
    db = await _driver(session)
    cols = list(zip(*rows, strict=True))
    await db.execute(
        "INSERT INTO compliance.parties (tenant_id, mode, party_id, kind, customer_id, country_code)"
        " SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[])"
        " ON CONFLICT (tenant_id, mode, party_id) DO NOTHING",
        *[list(c) for c in cols],
    )


async def load_parties(session: AsyncSession, keys: list[Key]) -> list[Any]:
    """Parties by id, each with its customer's country (a wallet's is its customer's)."""
    if not keys:
        return []
    db = await _driver(session)
    t, m, p = (list(c) for c in zip(*keys, strict=True))
    return list(
        await db.fetch(
            "SELECT p.tenant_id, p.mode, p.party_id, p.kind, p.customer_id,"
            " COALESCE(p.country_code, c.country_code) AS country_code"
            " FROM compliance.parties p LEFT JOIN compliance.parties c"
            " ON c.tenant_id = p.tenant_id AND c.mode = p.mode AND c.party_id = p.customer_id"
            " WHERE (p.tenant_id, p.mode, p.party_id) IN"
            " (SELECT * FROM unnest($1::text[], $2::text[], $3::text[]))",
            t,
            m,
            p,
        )
    )


# ---- policy data ----


async def load_external_accounts(session: AsyncSession, keys: list[Key]) -> list[Any]:
    if not keys:
        return []
    db = await _driver(session)
    t, m, ids = (list(c) for c in zip(*keys, strict=True))
    return list(
        await db.fetch(
            "SELECT * FROM compliance.external_accounts WHERE (tenant_id, mode, id) IN"
            " (SELECT * FROM unnest($1::text[], $2::text[], $3::text[]))",
            t,
            m,
            ids,
        )
    )


async def load_routes(session: AsyncSession, tenants: list[tuple[str, str]]) -> list[Any]:
    if not tenants:
        return []
    db = await _driver(session)
    t, m = (list(c) for c in zip(*tenants, strict=True))
    return list(
        await db.fetch(
            "SELECT tenant_id, mode, rail, currency FROM compliance.routes WHERE approved AND"
            " (tenant_id, mode) IN (SELECT * FROM unnest($1::text[], $2::text[]))",
            t,
            m,
        )
    )


async def load_caps(session: AsyncSession, tenants: list[tuple[str, str]]) -> list[Any]:
    if not tenants:
        return []
    db = await _driver(session)
    t, m = (list(c) for c in zip(*tenants, strict=True))
    return list(
        await db.fetch(
            "SELECT tenant_id, mode, per_transfer, daily, review_threshold FROM compliance.caps WHERE"
            " (tenant_id, mode) IN (SELECT * FROM unnest($1::text[], $2::text[]))",
            t,
            m,
        )
    )


async def set_route(
    session: AsyncSession,
    tenant_id: str,
    mode: str,
    rail: str,
    currency: str,
    approved: bool,
    actor: str | None,
) -> Any:
    return (
        await session.execute(
            text(
                "INSERT INTO compliance.routes (tenant_id, mode, rail, currency, approved, updated_by)"
                " VALUES (:t, :m, :r, :c, :a, :by) ON CONFLICT (tenant_id, mode, rail, currency)"
                " DO UPDATE SET approved = EXCLUDED.approved, updated_by = EXCLUDED.updated_by,"
                " updated_at = now() RETURNING *"
            ),
            {"t": tenant_id, "m": mode, "r": rail, "c": currency, "a": approved, "by": actor},
        )
    ).one()


async def set_cap(
    session: AsyncSession,
    tenant_id: str,
    mode: str,
    per_transfer: Decimal,
    daily: Decimal,
    review_threshold: Decimal | None,
    actor: str | None,
) -> Any:
    return (
        await session.execute(
            text(
                "INSERT INTO compliance.caps (tenant_id, mode, per_transfer, daily, review_threshold,"
                " updated_by) VALUES (:t, :m, :p, :d, :r, :by) ON CONFLICT (tenant_id, mode) DO UPDATE"
                " SET per_transfer = EXCLUDED.per_transfer, daily = EXCLUDED.daily,"
                " review_threshold = EXCLUDED.review_threshold, updated_by = EXCLUDED.updated_by,"
                " updated_at = now() RETURNING *"
            ),
            {"t": tenant_id, "m": mode, "p": per_transfer, "d": daily, "r": review_threshold, "by": actor},
        )
    ).one()


async def upsert_external_account(session: AsyncSession, row: dict[str, Any]) -> Any:
    """Insert, or update the same tenant and mode's account; None if the id is someone else's."""
    return (
        await session.execute(
            text(
                "INSERT INTO compliance.external_accounts (id, tenant_id, mode, customer_id, rail,"
                " currency, approved, account_number, routing_number, iban, bic, updated_by)"
                " VALUES (:id, :t, :m, :customer_id, :rail, :currency, :approved, :account_number,"
                " :routing_number, :iban, :bic, :by) ON CONFLICT (id) DO UPDATE SET"
                " customer_id = EXCLUDED.customer_id, rail = EXCLUDED.rail,"
                " currency = EXCLUDED.currency, approved = EXCLUDED.approved,"
                " account_number = EXCLUDED.account_number, routing_number = EXCLUDED.routing_number,"
                " iban = EXCLUDED.iban, bic = EXCLUDED.bic, updated_by = EXCLUDED.updated_by,"
                " updated_at = now()"
                " WHERE compliance.external_accounts.tenant_id = EXCLUDED.tenant_id"
                " AND compliance.external_accounts.mode = EXCLUDED.mode RETURNING *"
            ),
            row,
        )
    ).first()


async def policy_status(session: AsyncSession, tenant_id: str) -> tuple[bool, bool]:
    row = (
        await session.execute(
            text(
                "SELECT EXISTS (SELECT 1 FROM compliance.routes WHERE tenant_id = :t"
                " AND mode = 'production' AND approved) AS route,"
                " EXISTS (SELECT 1 FROM compliance.caps WHERE tenant_id = :t"
                " AND mode = 'production') AS cap"
            ),
            {"t": tenant_id},
        )
    ).one()
    return bool(row.route), bool(row.cap)


# ---- daily allowance ----


async def take_allowance(
    session: AsyncSession,
    tenant_id: str,
    mode: str,
    currency: str,
    day: date,
    amount: Decimal,
    daily: Decimal,
) -> bool:
    """Add ``amount`` to the day's usage iff it stays within ``daily``: one conditional upsert.

    The row lock taken by the upsert serialises racing transactions: the second re-checks
    the condition against the first's committed total, so two cannot share the last of a cap.
    """
    row = (
        await session.execute(
            text(
                "INSERT INTO compliance.cap_usage AS u (tenant_id, mode, currency, day, used)"
                " SELECT CAST(:t AS text), CAST(:m AS text), CAST(:c AS text), CAST(:day AS date),"
                " CAST(:amount AS numeric) WHERE CAST(:amount AS numeric) <= CAST(:daily AS numeric)"
                " ON CONFLICT (tenant_id, mode, currency, day) DO UPDATE"
                " SET used = u.used + EXCLUDED.used WHERE u.used + EXCLUDED.used <= CAST(:daily AS numeric)"
                " RETURNING used"
            ),
            {"t": tenant_id, "m": mode, "c": currency, "day": day, "amount": amount, "daily": daily},
        )
    ).first()
    return row is not None


async def used_today(session: AsyncSession, tenant_id: str, mode: str, currency: str, day: date) -> Decimal:
    used = (
        await session.execute(
            text(
                "SELECT used FROM compliance.cap_usage WHERE tenant_id = :t AND mode = :m"
                " AND currency = :c AND day = :day"
            ),
            {"t": tenant_id, "m": mode, "c": currency, "day": day},
        )
    ).scalar()
    return Decimal(used or 0)


async def insert_hold(
    session: AsyncSession,
    transfer_id: str,
    tenant_id: str,
    mode: str,
    currency: str,
    day: date,
    amount: Decimal,
) -> None:
    await session.execute(
        text(
            "INSERT INTO compliance.cap_holds (transfer_id, tenant_id, mode, currency, day, amount)"
            " VALUES (:id, :t, :m, :c, :day, :a) ON CONFLICT (transfer_id) DO NOTHING"
        ),
        {"id": transfer_id, "t": tenant_id, "m": mode, "c": currency, "day": day, "a": amount},
    )


async def release_hold(session: AsyncSession, transfer_id: str, tenant_id: str) -> Decimal | None:
    """Give a failed transfer's amount back to its day, once; None if nothing to release."""
    row = (
        await session.execute(
            text(
                "UPDATE compliance.cap_holds SET released_at = now() WHERE transfer_id = :id"
                " AND tenant_id = :t AND released_at IS NULL"
                " RETURNING tenant_id, mode, currency, day, amount"
            ),
            {"id": transfer_id, "t": tenant_id},
        )
    ).first()
    if row is None:
        return None
    await session.execute(
        text(
            "UPDATE compliance.cap_usage SET used = GREATEST(used - :a, 0) WHERE tenant_id = :t"
            " AND mode = :m AND currency = :c AND day = :day"
        ),
        {"a": row.amount, "t": row.tenant_id, "m": row.mode, "c": row.currency, "day": row.day},
    )
    return Decimal(row.amount)


def iso(ts: datetime | None) -> str | None:
    return None if ts is None else ts.isoformat().replace("+00:00", "Z")

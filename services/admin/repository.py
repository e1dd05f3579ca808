"""All identity SQL (tenants, API keys, audit log) lives here."""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import func, select, text, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from admin.models import DeadLetterRecord


def _iso(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def tenant_dict(row: Any) -> dict[str, Any]:
    return {
        "tenant_id": str(row.id),
        "tenant_name": row.name,
        "default_mode": row.default_mode,
        "rate_limit_per_minute": row.rate_limit_per_minute,
        "metadata": row.metadata,
        "live_enabled": row.live_enabled,
        "branding_approved_by": row.branding_approved_by,
        "branding_approved_at": _iso(row.branding_approved_at),
        "created_at": _iso(row.created_at),
        "updated_at": _iso(row.updated_at),
    }


def key_dict(row: Any) -> dict[str, Any]:
    """An API key as operators see it: never the key, never its hash."""
    return {
        "key_id": row.id,
        "key_prefix": row.key_prefix,
        "key_label": row.label,
        "scopes": list(row.scopes),
        "mode": row.mode,
        "created_at": _iso(row.created_at),
        "revoked_at": _iso(row.revoked_at),
    }


def audit_dict(row: Any) -> dict[str, Any]:
    return {
        "audit_id": str(row.id),
        "at": _iso(row.at),
        "actor": row.actor,
        "action": row.action,
        "request_id": row.request_id,
        "outcome": row.outcome,
        "target": row.target,
        "details": row.details,
    }


def as_uuid(value: str | None) -> uuid.UUID | None:
    if value is None:
        return None
    try:
        return uuid.UUID(value)
    except ValueError:
        return None


async def get_tenant(session: AsyncSession, tenant_id: str, *, lock: bool = False) -> Any:
    tid = as_uuid(tenant_id)
    if tid is None:
        return None
    sql = "SELECT * FROM identity.tenants WHERE id = :id" + (" FOR UPDATE" if lock else "")
    return (await session.execute(text(sql), {"id": tid})).first()


async def tenant_by_name(session: AsyncSession, name: str, *, lock: bool = False) -> Any:
    sql = "SELECT * FROM identity.tenants WHERE name = :n" + (" FOR UPDATE" if lock else "")
    return (await session.execute(text(sql), {"n": name})).first()


async def insert_tenant(session: AsyncSession, fields: dict[str, Any], approved_by: str | None) -> Any:
    return (
        await session.execute(
            text(
                "INSERT INTO identity.tenants (id, name, default_mode, rate_limit_per_minute, metadata,"
                " branding_approved_by, branding_approved_at)"
                " VALUES (:id, :name, :mode, :rl, CAST(:meta AS jsonb), :by,"
                " CASE WHEN CAST(:by AS text) IS NULL THEN NULL ELSE now() END)"
                " ON CONFLICT (name) DO NOTHING RETURNING *"
            ),
            {
                "id": uuid.uuid4(),
                "name": fields["name"],
                "mode": fields["default_mode"],
                "rl": fields["rate_limit_per_minute"],
                "meta": json.dumps(fields["metadata"]),
                "by": approved_by,
            },
        )
    ).first()


async def update_tenant(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    fields: dict[str, Any],
    approved_by: str | None,
    branding_changed: bool,
) -> Any:
    """Write the given fields; a branding change records who approved it (or clears approval)."""
    return (
        await session.execute(
            text(
                "UPDATE identity.tenants SET name = :name, default_mode = :mode,"
                " rate_limit_per_minute = :rl, metadata = CAST(:meta AS jsonb), updated_at = now(),"
                " branding_approved_by = CASE WHEN :changed THEN CAST(:by AS text)"
                "   ELSE branding_approved_by END,"
                " branding_approved_at = CASE WHEN :changed THEN"
                "   (CASE WHEN CAST(:by AS text) IS NULL THEN NULL ELSE now() END)"
                "   ELSE branding_approved_at END"
                " WHERE id = :id RETURNING *"
            ),
            {
                "id": tenant_id,
                "name": fields["name"],
                "mode": fields["default_mode"],
                "rl": fields["rate_limit_per_minute"],
                "meta": json.dumps(fields["metadata"]),
                "by": approved_by,
                "changed": branding_changed,
            },
        )
    ).first()


async def set_live_enabled(session: AsyncSession, tenant_id: uuid.UUID) -> Any:
    return (
        await session.execute(
            text(
                "UPDATE identity.tenants SET live_enabled = true, updated_at = now() WHERE id = :id"
                " RETURNING *"
            ),
            {"id": tenant_id},
        )
    ).first()


async def list_tenants(session: AsyncSession, limit: int, after: uuid.UUID | None) -> list[Any]:
    """Newest first; keyset on (created_at, id) of the cursor's tenant."""
    if after is None:
        sql = "SELECT * FROM identity.tenants ORDER BY created_at DESC, id DESC LIMIT :lim"
        params: dict[str, Any] = {"lim": limit + 1}
    else:
        sql = (
            "SELECT t.* FROM identity.tenants t, identity.tenants c WHERE c.id = :after"
            " AND (t.created_at, t.id) < (c.created_at, c.id)"
            " ORDER BY t.created_at DESC, t.id DESC LIMIT :lim"
        )
        params = {"lim": limit + 1, "after": after}
    return list((await session.execute(text(sql), params)).all())


async def keys_of(session: AsyncSession, tenant_id: uuid.UUID) -> list[Any]:
    return list(
        (
            await session.execute(
                text(
                    "SELECT * FROM identity.api_keys WHERE tenant_id = :t ORDER BY created_at DESC, id DESC"
                ),
                {"t": tenant_id},
            )
        ).all()
    )


async def insert_api_key(
    session: AsyncSession,
    key_id: str,
    tenant_id: str,
    key_hash: str,
    key_prefix: str,
    label: str,
    scopes: list[str],
    mode: str,
) -> None:
    await session.execute(
        text(
            "INSERT INTO identity.api_keys (id, tenant_id, key_hash, key_prefix, label, scopes, mode)"
            " VALUES (:id, :t, :h, :p, :l, :s, :m)"
        ),
        {
            "id": key_id,
            "t": uuid.UUID(tenant_id),
            "h": key_hash,
            "p": key_prefix,
            "l": label,
            "s": scopes,
            "m": mode,
        },
    )


async def revoke_api_key(session: AsyncSession, key_id: str) -> Any:
    return (
        await session.execute(
            text(
                "UPDATE identity.api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = :id"
                " RETURNING id, tenant_id, key_hash, revoked_at"
            ),
            {"id": key_id},
        )
    ).first()


async def append_audit(
    session: AsyncSession,
    *,
    actor: str,
    action: str,
    request_id: str,
    outcome: str,
    target: str | None,
    details: dict[str, Any],
) -> None:
    await session.execute(
        text(
            "INSERT INTO identity.audit_log (actor, action, request_id, outcome, target, details)"
            " VALUES (:a, :ac, :r, :o, :t, CAST(:d AS jsonb))"
        ),
        {
            "a": actor,
            "ac": action,
            "r": request_id,
            "o": outcome,
            "t": target,
            "d": json.dumps(details, default=str),
        },
    )


async def list_audit(
    session: AsyncSession,
    limit: int,
    after: int | None,
    actor: str | None,
    action: str | None,
    target: str | None,
) -> list[Any]:
    """Newest first, keyset on the id; optional filters."""
    where = ["(CAST(:after AS bigint) IS NULL OR id < :after)"]
    params: dict[str, Any] = {"after": after, "lim": limit + 1}
    for col, value in (("actor", actor), ("action", action), ("target", target)):
        if value is not None:
            where.append(f"{col} = :{col}")
            params[col] = value
    sql = f"SELECT * FROM identity.audit_log WHERE {' AND '.join(where)} ORDER BY id DESC LIMIT :lim"
    return list((await session.execute(text(sql), params)).all())


# ---- dead letters (identity.dead_letters) ----
DEAD_LETTERS = DeadLetterRecord.__table__  # type: ignore[attr-defined]


async def record_dead_letters(session: AsyncSession, rows: list[dict[str, Any]]) -> None:
    """Keep each dead letter once (a redelivered DLQ record is the same ``dead_letter_id``)."""
    if rows:
        await session.execute(
            pg_insert(DEAD_LETTERS).values(rows).on_conflict_do_nothing(index_elements=["dead_letter_id"])
        )


async def list_dead_letters(
    session: AsyncSession, limit: int, after_seq: int | None, service: str | None
) -> list[Any]:
    """Newest first, keyset on ``seq``."""
    q = select(DEAD_LETTERS).order_by(DEAD_LETTERS.c.seq.desc()).limit(limit + 1)
    if after_seq is not None:
        q = q.where(DEAD_LETTERS.c.seq < after_seq)
    if service is not None:
        q = q.where(DEAD_LETTERS.c.service == service)
    return list((await session.execute(q)).all())


async def take_for_redrive(session: AsyncSession, ids: list[str] | None, actor: str, limit: int) -> list[Any]:
    """Mark dead letters redriven (those not redriven yet) and return them: redriving twice
    has one effect, because the second call finds nothing left to take."""
    pick = select(DEAD_LETTERS.c.seq).where(DEAD_LETTERS.c.redriven_at.is_(None))
    if ids is not None:
        pick = pick.where(DEAD_LETTERS.c.dead_letter_id.in_(ids))
    pick = pick.order_by(DEAD_LETTERS.c.seq).limit(limit).with_for_update(skip_locked=True)
    stmt = (
        update(DEAD_LETTERS)
        .where(DEAD_LETTERS.c.seq.in_(pick.scalar_subquery()))
        .values(redriven_at=func.now(), redriven_by=actor)
        .returning(DEAD_LETTERS)
    )
    return sorted((await session.execute(stmt)).all(), key=lambda r: r.seq)

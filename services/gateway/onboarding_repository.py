"""All SQL of onboarding: authorizations (schema ``gateway``) and the approved branding.

Branding is read from ``identity.tenants`` (owned by admin; read-only here, like the rest of
the gateway's identity lookups).
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

_T = "gateway.onboarding_authorizations"


async def insert_authorization(session: AsyncSession, row: dict[str, Any]) -> Any:
    """Insert; with an Idempotency-Key already used by this tenant and mode, the earlier row."""
    created = (
        await session.execute(
            text(
                f"INSERT INTO {_T} (id, tenant_id, mode, idempotency_key, request_id, service_user_id,"
                " email, account_type, redirect_url, expires_at)"
                " VALUES (:id, :tenant_id, :mode, :idempotency_key, :request_id, :service_user_id,"
                " :email, :account_type, :redirect_url, :expires_at)"
                " ON CONFLICT (tenant_id, mode, idempotency_key) DO NOTHING RETURNING *"
            ),
            row,
        )
    ).first()
    if created is not None:
        return created
    return (
        await session.execute(
            text(f"SELECT * FROM {_T} WHERE tenant_id = :t AND mode = :m AND idempotency_key = :k"),
            {"t": row["tenant_id"], "m": row["mode"], "k": row["idempotency_key"]},
        )
    ).first()


async def get_authorization(session: AsyncSession, authorization_id: str) -> Any:
    return (
        await session.execute(text(f"SELECT * FROM {_T} WHERE id = :id"), {"id": authorization_id})
    ).first()


async def mark_pending(session: AsyncSession, authorization_id: str, command: bytes) -> bool:
    """Claim the link for one signup attempt (fails if used or another attempt is in flight)."""
    row = (
        await session.execute(
            text(
                f"UPDATE {_T} SET pending_command = :c, pending_at = now()"
                " WHERE id = :id AND used_at IS NULL AND pending_command IS NULL"
                " AND expires_at > now() RETURNING id"
            ),
            {"id": authorization_id, "c": command},
        )
    ).first()
    return row is not None


async def retake_pending(
    session: AsyncSession, authorization_id: str, command: bytes, stale_s: float
) -> bool:
    """Take over an attempt whose answer never came (older than ``stale_s``); one taker wins."""
    row = (
        await session.execute(
            text(
                f"UPDATE {_T} SET pending_at = now() WHERE id = :id AND pending_command = :c"
                " AND used_at IS NULL AND pending_at < now() - make_interval(secs => :s) RETURNING id"
            ),
            {"id": authorization_id, "c": command, "s": stale_s},
        )
    ).first()
    return row is not None


async def clear_pending(session: AsyncSession, authorization_id: str, command: bytes) -> None:
    """Release the claim of a refused attempt (the link stays usable)."""
    await session.execute(
        text(
            f"UPDATE {_T} SET pending_command = NULL, pending_at = NULL"
            " WHERE id = :id AND pending_command = :c"
        ),
        {"id": authorization_id, "c": command},
    )


async def consume(session: AsyncSession, authorization_id: str, customer_id: str) -> bool:
    """The first completed signup uses the link up; True only for that one."""
    row = (
        await session.execute(
            text(
                f"UPDATE {_T} SET used_at = now(), customer_id = :c, pending_command = NULL"
                " WHERE id = :id AND used_at IS NULL RETURNING id"
            ),
            {"id": authorization_id, "c": customer_id},
        )
    ).first()
    return row is not None


async def tenant_of(session: AsyncSession, tenant_id: str) -> Any:
    try:
        tid = uuid.UUID(tenant_id)
    except ValueError:
        return None
    return (
        await session.execute(
            text(
                "SELECT id, name, live_enabled, metadata, branding_approved_at FROM identity.tenants"
                " WHERE id = :id"
            ),
            {"id": tid},
        )
    ).first()

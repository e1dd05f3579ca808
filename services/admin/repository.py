"""All identity SQL (tenants, API keys, audit log) lives here, built from ``admin.models``."""

from __future__ import annotations

import json
import uuid
from typing import Any

from sqlalchemy import func, select, tuple_, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from admin.models import DeadLetterRecord, access_tokens, api_keys, audit_log, pending_actions, tenants
from common.tables import AnyRow, table_of
from common.times import iso
from common.views import columns


def tenant_dict(row: Any) -> dict[str, Any]:
    shown = {"tenant_id": str(row.id), "tenant_name": row.name}
    return shown | columns(
        row,
        "default_mode",
        "rate_limit_per_minute",
        "metadata",
        "live_enabled",
        "branding_approved_by",
        "branding_approved_at",
        "disabled_at",
        "disabled_by",
        "created_at",
        "updated_at",
    )


def key_dict(row: Any) -> dict[str, Any]:
    """An API key as operators see it: never the key, never its hash."""
    return {
        "key_id": row.id,
        "key_prefix": row.key_prefix,
        "key_label": row.label,
        "scopes": list(row.scopes),
        "mode": row.mode,
        "created_at": iso(row.created_at),
        "revoked_at": iso(row.revoked_at),
    }


def audit_dict(row: Any) -> dict[str, Any]:
    shown = {"audit_id": str(row.id)}
    return shown | columns(row, "at", "actor", "action", "request_id", "outcome", "target", "details")


def as_uuid(value: str | None) -> uuid.UUID | None:
    if value is None:
        return None
    try:
        return uuid.UUID(value)
    except ValueError:
        return None


async def get_tenant(session: AsyncSession, tenant_id: str, *, lock: bool = False) -> AnyRow | None:
    tid = as_uuid(tenant_id)
    if tid is None:
        return None
    q = select(tenants).where(tenants.c.id == tid)
    return (await session.execute(q.with_for_update() if lock else q)).first()


async def tenant_by_name(session: AsyncSession, name: str, *, lock: bool = False) -> AnyRow | None:
    q = select(tenants).where(tenants.c.name == name)
    return (await session.execute(q.with_for_update() if lock else q)).first()


def _approved_at(approved_by: str | None) -> Any:
    """When branding was approved: now, or never (no approver)."""
    return None if approved_by is None else func.now()


async def insert_tenant(
    session: AsyncSession, fields: dict[str, Any], approved_by: str | None
) -> AnyRow | None:
    stmt = (
        pg_insert(tenants)
        .values(
            id=uuid.uuid4(),
            name=fields["name"],
            default_mode=fields["default_mode"],
            rate_limit_per_minute=fields["rate_limit_per_minute"],
            metadata=fields["metadata"],
            branding_approved_by=approved_by,
            branding_approved_at=_approved_at(approved_by),
        )
        .on_conflict_do_nothing(index_elements=[tenants.c.name])
        .returning(*tenants.c)
    )
    return (await session.execute(stmt)).first()


async def update_tenant(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    fields: dict[str, Any],
    approved_by: str | None,
    branding_changed: bool,
) -> AnyRow | None:
    """Write the given fields; a branding change records who approved it (or clears approval)."""
    values: dict[str, Any] = {
        "name": fields["name"],
        "default_mode": fields["default_mode"],
        "rate_limit_per_minute": fields["rate_limit_per_minute"],
        "metadata": fields["metadata"],
        "updated_at": func.now(),
    }
    if branding_changed:
        values["branding_approved_by"] = approved_by
        values["branding_approved_at"] = _approved_at(approved_by)
    stmt = update(tenants).where(tenants.c.id == tenant_id).values(values).returning(*tenants.c)
    return (await session.execute(stmt)).first()


async def set_live_enabled(session: AsyncSession, tenant_id: uuid.UUID) -> AnyRow | None:
    stmt = (
        update(tenants)
        .where(tenants.c.id == tenant_id)
        .values(live_enabled=True, updated_at=func.now())
        .returning(*tenants.c)
    )
    return (await session.execute(stmt)).first()


async def set_disabled(session: AsyncSession, tenant_id: uuid.UUID, actor: str | None) -> AnyRow | None:
    """Disable the tenant (``actor`` given; the first disabling time is kept) or enable it (None)."""
    t = tenants.c
    values: dict[str, Any] = {"disabled_at": None, "disabled_by": None}
    if actor is not None:
        values = {
            "disabled_at": func.coalesce(t.disabled_at, func.now()),
            "disabled_by": func.coalesce(t.disabled_by, actor),
        }
    stmt = (
        update(tenants).where(t.id == tenant_id).values(updated_at=func.now(), **values).returning(*tenants.c)
    )
    return (await session.execute(stmt)).first()


async def list_tenants(session: AsyncSession, limit: int, after: uuid.UUID | None) -> list[AnyRow]:
    """Newest first; keyset on (created_at, id) of the cursor's tenant."""
    t = tenants.c
    q = select(tenants).order_by(t.created_at.desc(), t.id.desc()).limit(limit + 1)
    if after is not None:
        c = tenants.alias("c")
        q = q.where(c.c.id == after, tuple_(t.created_at, t.id) < tuple_(c.c.created_at, c.c.id))
    return list((await session.execute(q)).all())


async def keys_of(session: AsyncSession, tenant_id: uuid.UUID) -> list[AnyRow]:
    k = api_keys.c
    q = select(api_keys).where(k.tenant_id == tenant_id).order_by(k.created_at.desc(), k.id.desc())
    return list((await session.execute(q)).all())


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
        api_keys.insert().values(
            id=key_id,
            tenant_id=uuid.UUID(tenant_id),
            key_hash=key_hash,
            key_prefix=key_prefix,
            label=label,
            scopes=scopes,
            mode=mode,
        )
    )


async def revoke_api_key(session: AsyncSession, key_id: str) -> AnyRow | None:
    k = api_keys.c
    stmt = (
        update(api_keys)
        .where(k.id == key_id)
        .values(revoked_at=func.coalesce(k.revoked_at, func.now()))
        .returning(k.id, k.tenant_id, k.key_hash, k.revoked_at)
    )
    return (await session.execute(stmt)).first()


async def insert_access_token(
    session: AsyncSession, jti: str, tenant_id: str, mode: str, expires_at: Any
) -> None:
    values = {"jti": jti, "tenant_id": uuid.UUID(tenant_id), "mode": mode, "expires_at": expires_at}
    await session.execute(access_tokens.insert().values(values))


async def revoke_access_token(session: AsyncSession, jti: str, actor: str) -> AnyRow | None:
    """Revoke (idempotent: the first revocation's time and operator are kept); None if unknown."""
    a = access_tokens.c
    stmt = (
        update(access_tokens)
        .where(a.jti == jti)
        .values(
            revoked_at=func.coalesce(a.revoked_at, func.now()),
            revoked_by=func.coalesce(a.revoked_by, actor),
        )
        .returning(a.jti, a.tenant_id, a.mode, a.expires_at, a.revoked_at)
    )
    return (await session.execute(stmt)).first()


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
        audit_log.insert().values(
            actor=actor,
            action=action,
            request_id=request_id,
            outcome=outcome,
            target=target,
            details=_jsonable(details),
        )
    )


def _jsonable(value: dict[str, Any]) -> Any:
    """Details as JSON (anything else, such as a Decimal or a UUID, as its string)."""
    return json.loads(json.dumps(value, default=str))


async def list_audit(
    session: AsyncSession,
    limit: int,
    after: int | None,
    actor: str | None,
    action: str | None,
    target: str | None,
) -> list[AnyRow]:
    """Newest first, keyset on the id; optional filters."""
    a = audit_log.c
    q = select(audit_log).order_by(a.id.desc()).limit(limit + 1)
    if after is not None:
        q = q.where(a.id < after)
    for column, value in ((a.actor, actor), (a.action, action), (a.target, target)):
        if value is not None:
            q = q.where(column == value)
    return list((await session.execute(q)).all())


# ---- dead letters (identity.dead_letters) ----
DEAD_LETTERS = table_of(DeadLetterRecord)


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


async def take_for_redrive(session: AsyncSession, ids: list[str] | None, limit: int) -> list[Any]:
    """The dead letters to redrive now, locked (those neither redriven nor refused yet; a
    concurrent redrive skips them): :func:`settle_redrive` marks each afterwards, in the same
    transaction, so redriving twice has one effect."""
    pick = select(DEAD_LETTERS).where(
        DEAD_LETTERS.c.redriven_at.is_(None), DEAD_LETTERS.c.redrive_refused.is_(None)
    )
    if ids is not None:
        pick = pick.where(DEAD_LETTERS.c.dead_letter_id.in_(ids))
    pick = pick.order_by(DEAD_LETTERS.c.seq).limit(limit).with_for_update(skip_locked=True)
    return list((await session.execute(pick)).all())


async def settle_redrive(
    session: AsyncSession, actor: str, redriven: list[int], refused: dict[int, str]
) -> None:
    """Mark the letters redriven (by ``actor``, now) and the refused ones with their reason."""
    if redriven:
        await session.execute(
            update(DEAD_LETTERS)
            .where(DEAD_LETTERS.c.seq.in_(redriven))
            .values(redriven_at=func.now(), redriven_by=actor)
        )
    for seq, reason in refused.items():
        await session.execute(
            update(DEAD_LETTERS)
            .where(DEAD_LETTERS.c.seq == seq)
            .values(redrive_refused=reason, redriven_by=actor)
        )


# ---- four eyes (admin.operators.four_eyes) ----


async def propose_action(session: AsyncSession, **values: Any) -> None:
    await session.execute(pending_actions.insert().values(state="pending_approval", **values))


async def lock_pending_action(session: AsyncSession, action_id: str) -> AnyRow | None:
    """The proposal ``action_id``, locked until the approving transaction ends."""
    q = select(pending_actions).where(pending_actions.c.id == action_id).with_for_update()
    return (await session.execute(q)).first()


async def decide_pending_action(session: AsyncSession, action_id: str, state: str, by: str | None) -> None:
    await session.execute(
        update(pending_actions)
        .where(pending_actions.c.id == action_id)
        .values(state=state, decided_by=by, decided_at=func.now())
    )


async def list_pending_actions(session: AsyncSession, limit: int) -> list[Any]:
    """Proposals still waiting and not expired, oldest first."""
    p = pending_actions.c
    q = (
        select(p.id, p.action, p.proposed_by, p.proposed_at, p.expires_at)
        .where(p.state == "pending_approval", p.expires_at > func.now())
        .order_by(p.proposed_at)
        .limit(limit)
    )
    return list((await session.execute(q)).all())

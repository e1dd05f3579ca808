"""All compliance SQL lives here, built from the tables in ``compliance.models``.

A consumer batch runs in two statements sent straight to asyncpg (``batch``: read, write).
The statements below serve the rest (policy commands, the cap released by failed transfers,
operators' reads); batch writes there are one executemany (asyncpg pipelines it). Reads
return SQLAlchemy rows typed by the tables.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any

from sqlalchemy import (
    and_,
    column,
    delete,
    exists,
    func,
    select,
    tuple_,
    update,
    values,
)
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from common.tables import AnyRow, table_of, values_of
from compliance.models import (
    ComplianceCap,
    ComplianceRoute,
    cap_holds,
    cap_usage,
    caps,
    decisions,
    external_accounts,
    routes,
    screened_addresses,
)
from compliance.repository.batch import *  # noqa: F403 - a consumer batch's two statements

Key = tuple[str, str, str]  # (tenant_id, mode, id)

# ---- decisions (also the inbox) ----


async def list_decisions(
    session: AsyncSession, tenant_id: str | None, starting_after: str | None, limit: int
) -> list[AnyRow]:
    d = decisions.c
    q = (
        select(
            d.id,
            d.request_id,
            d.command_id,
            d.tenant_id,
            d.mode,
            d.command_type,
            d.outcome,
            d.rule,
            d.reason,
            d.inputs,
            d.created_at,
        )
        .order_by(d.id.desc())  # ids are time-ordered: newest first (migration 0008)
        .limit(limit)
    )
    if tenant_id is not None:
        q = q.where(d.tenant_id == tenant_id)
    if starting_after is not None:
        q = q.where(d.id < starting_after)
    return list((await session.execute(q)).all())


# ---- party registry ----

# ---- policy data ----


async def load_routes(session: AsyncSession, tenants: list[tuple[str, str]]) -> list[AnyRow]:
    if not tenants:
        return []
    r = routes.c
    q = select(r.tenant_id, r.mode, r.rail, r.currency).where(
        r.approved, tuple_(r.tenant_id, r.mode).in_(tenants)
    )
    return list((await session.execute(q)).all())


async def load_caps(session: AsyncSession, tenants: list[tuple[str, str]]) -> list[AnyRow]:
    if not tenants:
        return []
    c = caps.c
    q = select(c.tenant_id, c.mode, c.per_transfer, c.daily, c.review_threshold).where(
        tuple_(c.tenant_id, c.mode).in_(tenants)
    )
    return list((await session.execute(q)).all())


async def set_route(session: AsyncSession, route: ComplianceRoute) -> AnyRow:
    """Insert ``route``, or update its tenant, mode, rail and currency's route to it."""
    return await _put(session, route)


async def set_cap(session: AsyncSession, cap: ComplianceCap) -> AnyRow:
    """Insert ``cap``, or update its tenant and mode's cap to it."""
    return await _put(session, cap)


async def _put(session: AsyncSession, row: ComplianceRoute | ComplianceCap) -> AnyRow:
    """Insert ``row``, or set the stored row with its primary key to the columns ``row`` was
    built with (and ``updated_at`` to now): the row as stored."""
    table = table_of(type(row))
    values = values_of(row)
    ins = pg_insert(table).values(values)
    key = table.primary_key.columns
    changed = {name: ins.excluded[name] for name in values if name not in key}
    stmt = ins.on_conflict_do_update(index_elements=list(key), set_={**changed, "updated_at": func.now()})
    return (await session.execute(stmt.returning(*table.c))).one()


_EA_UPDATED = (
    "customer_id",
    "rail",
    "currency",
    "approved",
    "account_number",
    "routing_number",
    "iban",
    "bic",
    "updated_by",
)


async def upsert_external_account(session: AsyncSession, row: dict[str, Any]) -> AnyRow | None:
    """Insert, or update the same tenant and mode's account; None if the id is someone else's.

    ``row`` holds the table's columns (``id``, ``tenant_id``, ``mode``, ``customer_id``, ...).
    """
    ins = pg_insert(external_accounts).values(**row)
    e = external_accounts.c
    stmt = ins.on_conflict_do_update(
        index_elements=[e.id],
        set_={**{c: ins.excluded[c] for c in _EA_UPDATED}, "updated_at": func.now()},
        where=and_(e.tenant_id == ins.excluded.tenant_id, e.mode == ins.excluded.mode),
    ).returning(*external_accounts.c)
    return (await session.execute(stmt)).first()


async def policy_status(session: AsyncSession, tenant_id: str) -> tuple[bool, bool]:
    r, c = routes.c, caps.c
    q = select(
        exists().where(r.tenant_id == tenant_id, r.mode == "production", r.approved).label("route"),
        exists().where(c.tenant_id == tenant_id, c.mode == "production").label("cap"),
    )
    row = (await session.execute(q)).one()
    return bool(row.route), bool(row.cap)


# ---- daily allowance ----


UsageKey = tuple[str, str, str, date]  # (tenant_id, mode, currency, day)
_USAGE_KEY = ("tenant_id", "mode", "currency", "day")


async def lock_usage(session: AsyncSession, keys: list[UsageKey]) -> dict[UsageKey, Decimal]:
    """Lock the usage rows of ``keys`` (created at zero when missing), in the order given, and
    return their committed totals: one statement for a whole batch.

    ``ON CONFLICT DO UPDATE`` locks an existing row (waiting for a transaction that holds it,
    then reading what that one committed); a new row is locked by its insert. Callers pass
    the keys sorted, so concurrent batches lock in one global order and cannot deadlock.
    """
    if not keys:
        return {}
    u = cap_usage.c
    ins = pg_insert(cap_usage).values([{**dict(zip(_USAGE_KEY, k, strict=True)), "used": 0} for k in keys])
    stmt = ins.on_conflict_do_update(
        index_elements=[u.tenant_id, u.mode, u.currency, u.day], set_={"used": u.used}
    ).returning(u.tenant_id, u.mode, u.currency, u.day, u.used)
    rows = await session.execute(stmt)
    return {(r.tenant_id, r.mode, r.currency, r.day): Decimal(r.used) for r in rows}


async def set_usage(session: AsyncSession, totals: dict[UsageKey, Decimal]) -> None:
    """Write the new totals of rows this transaction locked (:func:`lock_usage`)."""
    if not totals:
        return
    u = cap_usage.c
    v = values(*(column(c, cap_usage.c[c].type) for c in (*_USAGE_KEY, "used")), name="v").data(
        [(*k, used) for k, used in sorted(totals.items())]
    )
    await session.execute(
        update(cap_usage)
        .where(u.tenant_id == v.c.tenant_id, u.mode == v.c.mode, u.currency == v.c.currency, u.day == v.c.day)
        .values(used=v.c.used)
    )


async def used_today(session: AsyncSession, tenant_id: str, mode: str, currency: str, day: date) -> Decimal:
    u = cap_usage.c
    used = (
        await session.execute(
            select(u.used).where(
                u.tenant_id == tenant_id, u.mode == mode, u.currency == currency, u.day == day
            )
        )
    ).scalar()
    return Decimal(used or 0)


def _released(table: Any, match: Any) -> Any:
    """Mark the holds ``match`` selects in ``table`` released, those not released yet;
    returning what each took (transfer_id, tenant_id, mode, currency, day, amount)."""
    c = table.c
    if table is decisions:
        taken, cols = c.hold_amount.is_not(None) & c.hold_released_at.is_(None), (c.hold_currency, c.hold_day)
        stmt = update(table).where(match, taken).values(hold_released_at=func.now())
        amount = c.hold_amount
    else:  # cap_holds: holds taken before migration 0007, or by the previous release
        cols = (c.currency, c.day)
        stmt = update(table).where(match, c.released_at.is_(None)).values(released_at=func.now())
        amount = c.amount
    return stmt.returning(
        c.transfer_id,
        c.tenant_id,
        c.mode,
        cols[0].label("currency"),
        cols[1].label("day"),
        amount.label("amount"),
    )


async def _mark_released(
    session: AsyncSession, by: tuple[str, ...], keys: list[tuple[str, ...]]
) -> list[AnyRow]:
    """Mark released the holds whose columns ``by`` match one of ``keys``, those not released
    yet, wherever they are kept (on the decision, or in ``cap_holds``); what each took."""
    if not keys:
        return []
    out: list[AnyRow] = []
    for table in (decisions, cap_holds):
        match = tuple_(*(table.c[name] for name in by)).in_(keys)
        out += (await session.execute(_released(table, match))).all()
    return out


async def mark_released(session: AsyncSession, holds: list[tuple[str, str]]) -> list[AnyRow]:
    """Mark the holds of (transfer_id, tenant_id) released, those not released yet; returns
    what each took (transfer_id, tenant_id, mode, currency, day, amount)."""
    return await _mark_released(session, ("transfer_id", "tenant_id"), list(holds))


async def mark_released_for(session: AsyncSession, failed: list[tuple[str, str, str]]) -> list[AnyRow]:
    """:func:`mark_released` for the holds of (transfer_id, command_id, tenant_id): a hold
    without its command recorded is never matched."""
    return await _mark_released(session, ("transfer_id", "command_id", "tenant_id"), list(failed))


# ---- screening (compliance.screening) ----


async def add_screened(
    session: AsyncSession, chain: str, address: str, reason: str, actor: str | None
) -> AnyRow:
    stmt = (
        pg_insert(screened_addresses)
        .values(chain=chain, address=address, reason=reason, added_by=actor)
        .on_conflict_do_update(
            index_elements=["chain", "address"], set_={"reason": reason, "added_by": actor}
        )
        .returning(*screened_addresses.c)
    )
    return (await session.execute(stmt)).one()


async def remove_screened(session: AsyncSession, chain: str, address: str) -> bool:
    stmt = (
        delete(screened_addresses)
        .where(screened_addresses.c.chain == chain, screened_addresses.c.address == address)
        .returning(screened_addresses.c.address)
    )
    return (await session.execute(stmt)).first() is not None


async def list_screened(session: AsyncSession, limit: int, after: tuple[str, str] | None) -> list[AnyRow]:
    stmt = select(screened_addresses)
    if after is not None:
        stmt = stmt.where(tuple_(screened_addresses.c.chain, screened_addresses.c.address) > after)
    stmt = stmt.order_by(screened_addresses.c.chain, screened_addresses.c.address).limit(limit)
    return list((await session.execute(stmt)).all())

"""All ledger SQL lives here. Functions take the session; the boundary owns the transaction."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from common.contracts.commands import CreateCustomer
from common.db import driver

Row = Any


async def _one(session: AsyncSession, sql: str, **params: Any) -> Row:
    return (await session.execute(text(sql), params)).first()


async def _all(session: AsyncSession, sql: str, **params: Any) -> list[Row]:
    return list((await session.execute(text(sql), params)).all())


# ---- customers ----


async def insert_customer(session: AsyncSession, cmd: CreateCustomer) -> dict[str, Any]:
    row = await _one(
        session,
        "INSERT INTO ledger.customers (id, tenant_id, mode, account_type, email, country_code,"
        " service_user_id, full_name, company_name, registration_number, phone_e164)"
        " VALUES (:id, :tenant_id, :mode, :account_type, :email, :country_code,"
        " :service_user_id, :full_name, :company_name, :registration_number, :phone_e164)"
        " RETURNING created_at",
        id=cmd.customer_id,
        tenant_id=cmd.ctx.tenant_id,
        mode=cmd.ctx.mode,
        account_type=cmd.account_type,
        email=cmd.email,
        country_code=cmd.country_code,
        service_user_id=cmd.service_user_id,
        full_name=cmd.full_name,
        company_name=cmd.company_name,
        registration_number=cmd.registration_number,
        phone_e164=cmd.phone_e164,
    )
    return {"created_at": row.created_at}


CUSTOMER_COLUMNS = (
    "id, tenant_id, mode, account_type, email, country_code, service_user_id, full_name,"
    " company_name, registration_number, phone_e164"
)


async def insert_customers(session: AsyncSession, cmds: list[CreateCustomer]) -> None:
    """The batched form of :func:`insert_customer`: one statement for a whole batch."""
    conn = await driver(session)
    await conn.execute(
        f"INSERT INTO ledger.customers ({CUSTOMER_COLUMNS}) SELECT * FROM unnest("
        "$1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],"
        " $8::text[], $9::text[], $10::text[], $11::text[])",
        [c.customer_id for c in cmds],
        [c.ctx.tenant_id for c in cmds],
        [c.ctx.mode for c in cmds],
        [c.account_type for c in cmds],
        [c.email for c in cmds],
        [c.country_code for c in cmds],
        [c.service_user_id for c in cmds],
        [c.full_name for c in cmds],
        [c.company_name for c in cmds],
        [c.registration_number for c in cmds],
        [c.phone_e164 for c in cmds],
    )


async def get_customer(session: AsyncSession, tenant_id: str, mode: str, customer_id: str) -> Row:
    return await _one(
        session,
        "SELECT * FROM ledger.customers WHERE id = :id AND tenant_id = :t AND mode = :m",
        id=customer_id,
        t=tenant_id,
        m=mode,
    )


# ---- wallets and their accounts ----

WALLET_SELECT = (
    "SELECT w.*, a.balance AS available_balance, h.balance AS held_balance FROM ledger.wallets w"
    " JOIN ledger.accounts a ON a.id = w.id || '.available'"
    " JOIN ledger.accounts h ON h.id = w.id || '.held'"
)


async def insert_wallet(
    session: AsyncSession,
    *,
    wallet_id: str,
    tenant_id: str,
    mode: str,
    customer_id: str,
    symbol: str,
    chain: str,
    address: str,
) -> Row:
    row = await _one(
        session,
        "INSERT INTO ledger.wallets (id, tenant_id, mode, customer_id, symbol, chain, deposit_address)"
        " VALUES (:id, :t, :m, :c, :s, :ch, :a) RETURNING created_at",
        id=wallet_id,
        t=tenant_id,
        m=mode,
        c=customer_id,
        s=symbol,
        ch=chain,
        a=address,
    )
    await session.execute(
        text(
            "INSERT INTO ledger.accounts (id, tenant_id, mode, currency, kind, wallet_id) VALUES"
            " (:id || '.available', :t, :m, :s, 'available', :id),"
            " (:id || '.held', :t, :m, :s, 'held', :id)"
        ),
        {"id": wallet_id, "t": tenant_id, "m": mode, "s": symbol},
    )
    return row


async def get_wallet(session: AsyncSession, tenant_id: str, mode: str, wallet_id: str) -> Row:
    return await _one(
        session,
        WALLET_SELECT + " WHERE w.id = :id AND w.tenant_id = :t AND w.mode = :m",
        id=wallet_id,
        t=tenant_id,
        m=mode,
    )


async def wallet_by_address(session: AsyncSession, tenant_id: str, mode: str, address: str) -> Row:
    return await _one(
        session,
        WALLET_SELECT + " WHERE w.deposit_address = :a AND w.tenant_id = :t AND w.mode = :m",
        a=address,
        t=tenant_id,
        m=mode,
    )


async def customer_wallets(
    session: AsyncSession, tenant_id: str, mode: str, customer_id: str, symbol: str, chain: str
) -> list[Row]:
    return await _all(
        session,
        WALLET_SELECT + " WHERE w.customer_id = :c AND w.tenant_id = :t"
        " AND w.mode = :m AND w.symbol = :s AND w.chain = :ch ORDER BY w.id",
        c=customer_id,
        t=tenant_id,
        m=mode,
        s=symbol,
        ch=chain,
    )


# ---- virtual accounts ----


async def insert_virtual_account(
    session: AsyncSession,
    *,
    va_id: str,
    tenant_id: str,
    mode: str,
    customer_id: str,
    currency: str,
    wallet_id: str,
    destination: dict[str, Any],
    numbers: dict[str, Any],
) -> Row:
    return await _one(
        session,
        "INSERT INTO ledger.virtual_accounts (id, tenant_id, mode, customer_id, currency, wallet_id,"
        " destination, account_number, routing_number, iban, bic, bank_name) VALUES (:id, :t, :m,"
        " :c, :cur, :w, CAST(:d AS JSONB), :an, :rn, :iban, :bic, :bank) RETURNING created_at",
        id=va_id,
        t=tenant_id,
        m=mode,
        c=customer_id,
        cur=currency,
        w=wallet_id,
        d=json.dumps(destination),
        an=numbers["account_number"],
        rn=numbers["routing_number"],
        iban=numbers["iban"],
        bic=numbers["bic"],
        bank=numbers["bank_name"],
    )


async def get_virtual_account(session: AsyncSession, tenant_id: str, mode: str, va_id: str) -> Row:
    return await _one(
        session,
        "SELECT * FROM ledger.virtual_accounts WHERE id = :id AND tenant_id = :t AND mode = :m",
        id=va_id,
        t=tenant_id,
        m=mode,
    )


# ---- journal ----


async def ensure_external_account(
    session: AsyncSession, account_id: str, tenant_id: str, mode: str, currency: str, kind: str
) -> None:
    await session.execute(
        text(
            "INSERT INTO ledger.accounts (id, tenant_id, mode, currency, kind) VALUES"
            " (:id, :t, :m, :c, :k) ON CONFLICT (id) DO NOTHING"
        ),
        {"id": account_id, "t": tenant_id, "m": mode, "c": currency, "k": kind},
    )


async def insert_entry(
    session: AsyncSession,
    *,
    entry_id: str,
    tenant_id: str,
    mode: str,
    kind: str,
    transfer_id: str | None,
    deposit_id: str | None,
    postings: list[tuple[str, str, Decimal]],
) -> None:
    await session.execute(
        text(
            "INSERT INTO ledger.journal_entries (id, tenant_id, mode, kind, transfer_id, deposit_id)"
            " VALUES (:id, :t, :m, :k, :tr, :dep)"
        ),
        {"id": entry_id, "t": tenant_id, "m": mode, "k": kind, "tr": transfer_id, "dep": deposit_id},
    )
    await session.execute(
        text(
            "INSERT INTO ledger.postings (entry_id, account_id, currency, amount) VALUES (:e, :a, :c, :amt)"
        ),
        [{"e": entry_id, "a": a, "c": c, "amt": amt} for a, c, amt in postings],
    )


async def move_wallet_balance(session: AsyncSession, account_id: str, delta: Decimal) -> bool:
    """Row-locking update that refuses to take a wallet account below zero."""
    row = await _one(
        session,
        "UPDATE ledger.accounts SET balance = balance + :d WHERE id = :id AND balance + :d >= 0"
        " RETURNING balance",
        d=delta,
        id=account_id,
    )
    return row is not None


# ---- transfers and payouts ----

TRANSFER_COLUMNS = (
    "id, tenant_id, mode, kind, route, state, previous_state, amount, currency, source_wallet_id,"
    " destination_wallet_id, source, destination, developer_fee, idempotency_key, decision_id,"
    " next_step_at, created_at, updated_at"
)

NEXT_STEP = (
    "CASE WHEN CAST(:next_step_s AS FLOAT8) IS NULL THEN NULL"
    " ELSE clock_timestamp() + make_interval(secs => CAST(:next_step_s AS FLOAT8)) END"
)


async def insert_transfer(session: AsyncSession, t: dict[str, Any]) -> Row:
    """Insert at ``pending``; ``None`` when (tenant, mode, idempotency_key) already exists."""
    return await _one(
        session,
        "INSERT INTO ledger.transfers (id, tenant_id, mode, kind, route, state, amount, currency,"
        " source_wallet_id, destination_wallet_id, source, destination, developer_fee,"
        " idempotency_key, decision_id, next_step_at) VALUES (:id, :tenant_id, :mode, :kind, :route,"
        " 'pending', :amount, :currency, :source_wallet_id, :destination_wallet_id,"
        " CAST(:source AS JSONB), CAST(:destination AS JSONB), CAST(:developer_fee AS JSONB),"
        f" :idempotency_key, :decision_id, {NEXT_STEP})"
        " ON CONFLICT (tenant_id, mode, idempotency_key) DO NOTHING"
        f" RETURNING {TRANSFER_COLUMNS}",
        **{
            **t,
            "source": json.dumps(t["source"]),
            "destination": json.dumps(t["destination"]),
            "developer_fee": json.dumps(t["developer_fee"]) if t["developer_fee"] else None,
        },
    )


async def transfer_by_idempotency_key(session: AsyncSession, tenant_id: str, mode: str, key: str) -> Row:
    return await _one(
        session,
        f"SELECT {TRANSFER_COLUMNS} FROM ledger.transfers WHERE tenant_id = :t"
        " AND mode = :m AND idempotency_key = :k",
        t=tenant_id,
        m=mode,
        k=key,
    )


async def lock_transfer(
    session: AsyncSession, transfer_id: str, tenant_id: str | None = None, mode: str | None = None
) -> Row:
    """The transfer row, locked for a state change; tenant and mode narrow it when given."""
    scope = "" if tenant_id is None else " AND tenant_id = :t"
    scope += "" if mode is None else " AND mode = :m"
    return await _one(
        session,
        f"SELECT {TRANSFER_COLUMNS} FROM ledger.transfers WHERE id = :id{scope} FOR UPDATE",
        id=transfer_id,
        t=tenant_id,
        m=mode,
    )


async def set_state(
    session: AsyncSession, transfer_id: str, state: str, previous: str, next_step_s: float | None
) -> Row:
    return await _one(
        session,
        "UPDATE ledger.transfers SET state = :s, previous_state = :p, updated_at = clock_timestamp(),"
        f" next_step_at = {NEXT_STEP} WHERE id = :id RETURNING {TRANSFER_COLUMNS}",
        s=state,
        p=previous,
        next_step_s=next_step_s,
        id=transfer_id,
    )


async def unschedule(session: AsyncSession, transfer_id: str) -> None:
    await session.execute(
        text("UPDATE ledger.transfers SET next_step_at = NULL WHERE id = :id"), {"id": transfer_id}
    )


async def record_state_change(
    session: AsyncSession,
    transfer_id: str,
    from_state: str | None,
    to_state: str,
    cause: str,
    request_id: str | None,
) -> None:
    await session.execute(
        text(
            "INSERT INTO ledger.state_changes (transfer_id, from_state, to_state, cause, request_id)"
            " VALUES (:id, :f, :to, :c, :r)"
        ),
        {"id": transfer_id, "f": from_state, "to": to_state, "c": cause, "r": request_id},
    )


async def due_transfers(session: AsyncSession, limit: int) -> list[Row]:
    """Sandbox transfers whose next simulated step is due, locked; other instances skip them."""
    return await _all(
        session,
        f"SELECT {TRANSFER_COLUMNS} FROM ledger.transfers WHERE next_step_at <= clock_timestamp()"
        " AND mode = 'sandbox' ORDER BY next_step_at LIMIT :n FOR UPDATE SKIP LOCKED",
        n=limit,
    )


# ---- deposits ----


async def insert_deposit(session: AsyncSession, d: dict[str, Any]) -> Row:
    return await _one(
        session,
        "INSERT INTO ledger.deposits (id, tenant_id, mode, virtual_account_id, wallet_id,"
        " fiat_currency, fiat_amount, currency, amount) VALUES (:id, :tenant_id, :mode,"
        " :virtual_account_id, :wallet_id, :fiat_currency, :fiat_amount, :currency, :amount)"
        " RETURNING created_at",
        **d,
    )


# ---- reads ----

READS = {
    "customers": ("SELECT * FROM ledger.customers c", "c", ""),
    "wallets": (WALLET_SELECT, "w", ""),
    "virtual-accounts": ("SELECT * FROM ledger.virtual_accounts v", "v", ""),
    "transfers": (f"SELECT {TRANSFER_COLUMNS} FROM ledger.transfers t", "t", " AND t.kind = 'transfer'"),
    "payouts": (f"SELECT {TRANSFER_COLUMNS} FROM ledger.transfers t", "t", " AND t.kind = 'payout'"),
}


async def read_one(session: AsyncSession, resource: str, tenant_id: str, mode: str, resource_id: str) -> Row:
    select, a, extra = READS[resource]
    return await _one(
        session,
        f"{select} WHERE {a}.id = :id AND {a}.tenant_id = :t AND {a}.mode = :m{extra}",
        id=resource_id,
        t=tenant_id,
        m=mode,
    )


async def read_page(
    session: AsyncSession, resource: str, tenant_id: str, mode: str, limit: int, starting_after: str | None
) -> list[Row]:
    """Newest first (ids sort by creation time); ``limit + 1`` rows tell whether more exist."""
    select, a, extra = READS[resource]
    after = f" AND {a}.id < :after" if starting_after else ""
    return await _all(
        session,
        f"{select} WHERE {a}.tenant_id = :t AND {a}.mode = :m{extra}{after} ORDER BY {a}.id DESC LIMIT :n",
        t=tenant_id,
        m=mode,
        after=starting_after,
        n=limit + 1,
    )

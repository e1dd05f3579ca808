"""The baselines ``make bench`` measures beside the suite, served like the gateway (Litestar on
uvicorn): a bare endpoint, and the monolith a user could pick instead.

- ``bare``: answers ``POST /v1/customers`` and ``POST /v1/transfers`` at once (reads the body).
- ``monolith``: validates the same bodies and does the same work synchronously with asyncpg:
  a customer is one INSERT; a transfer is one transaction on tables shaped like the ledger's
  (``bench_ledger``): both wallets read, two balance updates in a global lock order (account id)
  with the overdraft check in the debit's WHERE clause, the transfer row (unique per
  idempotency key: a replay answers the original), one journal entry and its two postings.
- ``samecontract``: the suite's own code in one process, one transaction per request
  (tools.bench.samecontract), run with the suite's environment.
- ``python -m tools.bench.baselines seed DSN N``: creates ``bench_ledger`` with N funded wallets
  and prints their ids (what the transfer load generators read).
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from decimal import Decimal
from typing import Any

import asyncpg
import msgspec
from litestar import Litestar, Request, Response, get, post
from litestar.datastructures import State

from common.service import serve

SCHEMA_DDL = [
    "CREATE SCHEMA IF NOT EXISTS bench_ledger",
    """CREATE TABLE IF NOT EXISTS bench_ledger.wallets (id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL,
        mode TEXT NOT NULL, symbol TEXT NOT NULL, chain TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS bench_ledger.accounts (id TEXT PRIMARY KEY,
        wallet_id TEXT NOT NULL REFERENCES bench_ledger.wallets (id), currency TEXT NOT NULL,
        balance NUMERIC(38, 6) NOT NULL DEFAULT 0 CHECK (balance >= 0))""",
    """CREATE TABLE IF NOT EXISTS bench_ledger.transfers (id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL,
        mode TEXT NOT NULL, state TEXT NOT NULL, amount NUMERIC(38, 6) NOT NULL CHECK (amount > 0),
        currency TEXT NOT NULL, source_wallet_id TEXT NOT NULL REFERENCES bench_ledger.wallets (id),
        destination_wallet_id TEXT NOT NULL REFERENCES bench_ledger.wallets (id),
        source JSONB NOT NULL, destination JSONB NOT NULL, idempotency_key TEXT NOT NULL,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        CONSTRAINT bench_transfers_idem UNIQUE (tenant_id, mode, idempotency_key))""",
    """CREATE TABLE IF NOT EXISTS bench_ledger.journal_entries (id TEXT PRIMARY KEY,
        transfer_id TEXT NOT NULL, kind TEXT NOT NULL, created_at TIMESTAMPTZ NOT NULL DEFAULT now())""",
    """CREATE TABLE IF NOT EXISTS bench_ledger.postings (id BIGSERIAL PRIMARY KEY,
        entry_id TEXT NOT NULL REFERENCES bench_ledger.journal_entries (id),
        account_id TEXT NOT NULL REFERENCES bench_ledger.accounts (id), currency TEXT NOT NULL,
        amount NUMERIC(38, 6) NOT NULL CHECK (amount <> 0))""",
    "CREATE INDEX IF NOT EXISTS bench_postings_account ON bench_ledger.postings (account_id)",
]
TENANT, MODE = "ten_bench", "sandbox"


class CustomerIn(msgspec.Struct):
    account_type: str
    email: str
    country_code: str
    service_user_id: str
    full_name: str | None = None


class Party(msgspec.Struct):
    payment_rail: str
    currency: str
    provider_wallet_id: str
    amount: str | None = None


class TransferIn(msgspec.Struct):
    source: Party
    destination: Party
    idempotency_key: str


def _json(status: int, payload: Any) -> Response[bytes]:
    return Response(msgspec.json.encode(payload), status_code=status, media_type="application/json")


def _refuse(status: int, code: str, reason: str) -> Response[bytes]:
    return _json(status, {"success": False, "error": {"code": code, "details": {"reason": reason}}})


@post(["/v1/customers", "/v1/transfers"], status_code=201)
async def bare(request: Request[Any, Any, State]) -> Response[bytes]:
    await request.body()
    return Response(
        b'{"success":true,"data":{"customer_id":"cus_x","provider":"service"}}',
        status_code=201,
        media_type="application/json",
    )


@post("/v1/customers", status_code=201)
async def monolith(request: Request[Any, Any, State], state: State) -> Response[bytes]:
    body = msgspec.json.decode(await request.body(), type=CustomerIn)
    cid = "cus_" + uuid.uuid4().hex
    async with state.pool.acquire() as conn:
        await conn.execute(
            "INSERT INTO bench_customers (id, account_type, email, country_code, service_user_id,"
            " full_name) VALUES ($1, $2, $3, $4, $5, $6)",
            cid,
            body.account_type,
            body.email,
            body.country_code,
            body.service_user_id,
            body.full_name,
        )
    return _json(201, {"success": True, "data": {"customer_id": cid, "provider": "service"}})


@post("/v1/transfers", status_code=201)
async def monolith_transfer(request: Request[Any, Any, State], state: State) -> Response[bytes]:
    try:
        body = msgspec.json.decode(await request.body(), type=TransferIn)
        amount = Decimal(body.source.amount or "")
    except (msgspec.DecodeError, ArithmeticError):
        return _refuse(400, "invalid_request", "invalid_body")
    src, dst = body.source.provider_wallet_id, body.destination.provider_wallet_id
    if amount <= 0 or src == dst or body.source.currency != body.destination.currency:
        return _refuse(400, "invalid_request", "invalid_parties")
    tid = "tr_" + uuid.uuid4().hex
    async with state.pool.acquire() as conn, conn.transaction():
        found = await conn.fetch(
            "SELECT id, symbol FROM bench_ledger.wallets WHERE tenant_id = $1 AND mode = $2 AND id = ANY($3)",
            TENANT,
            MODE,
            [src, dst],
        )
        if len(found) != 2 or any(w["symbol"] != body.source.currency for w in found):
            return _refuse(404, "not_found", "wallet")
        inserted = await conn.fetchval(
            "INSERT INTO bench_ledger.transfers (id, tenant_id, mode, state, amount, currency,"
            " source_wallet_id, destination_wallet_id, source, destination, idempotency_key)"
            " VALUES ($1, $2, $3, 'completed', $4, $5, $6, $7, $8, $9, $10)"
            " ON CONFLICT (tenant_id, mode, idempotency_key) DO NOTHING RETURNING id",
            tid,
            TENANT,
            MODE,
            amount,
            body.source.currency,
            src,
            dst,
            msgspec.json.encode(body.source).decode(),
            msgspec.json.encode(body.destination).decode(),
            body.idempotency_key,
        )
        if inserted is None:  # a replay answers the original
            prior = await conn.fetchval(
                "SELECT id FROM bench_ledger.transfers WHERE tenant_id = $1 AND mode = $2"
                " AND idempotency_key = $3",
                TENANT,
                MODE,
                body.idempotency_key,
            )
            return _json(201, {"success": True, "data": {"transfer_id": prior, "state": "completed"}})
        # Both rows locked in one global order (account id), so two transfers never deadlock.
        for account in sorted((src + ":available", dst + ":available")):
            if account.startswith(src + ":"):
                ok = await conn.fetchval(
                    "UPDATE bench_ledger.accounts SET balance = balance - $2"
                    " WHERE id = $1 AND balance >= $2 RETURNING 1",
                    account,
                    amount,
                )
                if ok is None:
                    raise _Refused
            else:
                await conn.execute(
                    "UPDATE bench_ledger.accounts SET balance = balance + $2 WHERE id = $1", account, amount
                )
        entry = "je_" + uuid.uuid4().hex
        await conn.execute(
            "INSERT INTO bench_ledger.journal_entries (id, transfer_id, kind) VALUES ($1, $2, 'transfer')",
            entry,
            tid,
        )
        await conn.executemany(
            "INSERT INTO bench_ledger.postings (entry_id, account_id, currency, amount)"
            " VALUES ($1, $2, $3, $4)",
            [
                (entry, src + ":available", body.source.currency, -amount),
                (entry, dst + ":available", body.source.currency, amount),
            ],
        )
    return _json(201, {"success": True, "data": {"transfer_id": tid, "state": "completed"}})


class _Refused(Exception):
    """Insufficient funds: raised inside the transaction so that it rolls back."""


def _refused_handler(_: Request[Any, Any, State], __: Exception) -> Response[bytes]:
    return _refuse(400, "invalid_request", "insufficient_funds")


@get("/readyz")
async def readyz() -> dict[str, str]:
    return {"status": "ready"}


def create(kind: str, dsn: str) -> Litestar:
    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        if kind == "monolith":
            app.state.pool = await asyncpg.create_pool(dsn, min_size=4, max_size=10)
            await app.state.pool.execute(
                "CREATE TABLE IF NOT EXISTS bench_customers (id TEXT PRIMARY KEY, account_type TEXT,"
                " email TEXT, country_code TEXT, service_user_id TEXT, full_name TEXT,"
                " created_at TIMESTAMPTZ NOT NULL DEFAULT now())"
            )
        yield
        if kind == "monolith":
            await app.state.pool.close()

    handlers = [monolith, monolith_transfer] if kind == "monolith" else [bare]
    return Litestar([*handlers, readyz], lifespan=[lifespan], exception_handlers={_Refused: _refused_handler})


async def seed(dsn: str, wallets: int, balance: str = "1000000") -> list[str]:
    """``bench_ledger`` afresh with ``wallets`` funded USDC wallets; returns their ids."""
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("DROP SCHEMA IF EXISTS bench_ledger CASCADE")
        for ddl in SCHEMA_DDL:
            await conn.execute(ddl)
        await conn.execute(
            "INSERT INTO bench_ledger.wallets SELECT 'wal_bench_' || i, $1, $2, 'USDC', 'BASE'"
            " FROM generate_series(1, $3) AS i",
            TENANT,
            MODE,
            wallets,
        )
        await conn.execute(
            "INSERT INTO bench_ledger.accounts SELECT id || ':available', id, 'USDC', $1::numeric"
            " FROM bench_ledger.wallets",
            balance,
        )
        await conn.execute("ANALYZE")
        return [f"wal_bench_{i}" for i in range(1, wallets + 1)]
    finally:
        await conn.close()


if __name__ == "__main__":
    if sys.argv[1] == "seed":
        print("\n".join(asyncio.run(seed(sys.argv[2], int(sys.argv[3])))))
    else:
        kind, port = sys.argv[1], int(sys.argv[2])
        if kind == "samecontract":  # the suite's code in one process: tools.bench.samecontract
            from tools.bench import samecontract

            serve(samecontract.create(), "127.0.0.1", port)
        else:
            serve(create(kind, os.environ.get("BENCH_DSN", "")), "127.0.0.1", port)

"""The two baselines ``make bench`` measures beside the suite, served like the gateway
(Litestar on uvicorn): a bare endpoint, and the monolith a user could pick instead, which
validates the same body and does the same single INSERT synchronously with asyncpg."""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import asyncpg
import msgspec
from litestar import Litestar, Request, Response, get, post
from litestar.datastructures import State

from common.service import serve


class CustomerIn(msgspec.Struct):
    account_type: str
    email: str
    country_code: str
    service_user_id: str
    full_name: str | None = None


@post("/v1/customers", status_code=201)
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
    return Response(
        msgspec.json.encode({"success": True, "data": {"customer_id": cid, "provider": "service"}}),
        status_code=201,
        media_type="application/json",
    )


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

    return Litestar([monolith if kind == "monolith" else bare, readyz], lifespan=[lifespan])


if __name__ == "__main__":
    kind, port = sys.argv[1], int(sys.argv[2])
    serve(create(kind, os.environ.get("BENCH_DSN", "")), "127.0.0.1", port)

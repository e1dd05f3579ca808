"""The suite's database seen from a test: one way to connect, one way to run a statement."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import asyncpg
from sqlalchemy.engine import make_url


def pg_kwargs(database_url: str) -> dict[str, Any]:
    """asyncpg's connect arguments for a SQLAlchemy URL (TCP, or a socket in ``?host=``)."""
    url = make_url(database_url)
    kw: dict[str, Any] = {"user": url.username or "postgres", "database": url.database}
    if url.password:
        kw["password"] = url.password
    if url.query.get("host"):
        kw["host"] = url.query["host"]
    else:
        kw.update(host=url.host, port=url.port or 5432)
    return kw


async def pg_connect(database_url: str) -> asyncpg.Connection:
    conn = await asyncpg.connect(**pg_kwargs(database_url))
    await conn.set_type_codec("jsonb", encoder=json.dumps, decoder=json.loads, schema="pg_catalog")
    return conn


async def fetch(database_url: str, sql: str, *args: Any) -> list[dict[str, Any]]:
    conn = await pg_connect(database_url)
    try:
        return [dict(r) for r in await conn.fetch(sql, *args)]
    finally:
        await conn.close()


def run_async(coro: Any) -> Any:
    """Run a coroutine on a fresh loop in a worker thread (safe beside Playwright's loop and
    inside a running one)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()

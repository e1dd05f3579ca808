"""Helpers for the admin and onboarding tests: direct reads of the database and of Kafka."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import asyncpg
import msgspec
from aiokafka import AIOKafkaConsumer
from sqlalchemy.engine import make_url

from tests.conftest import ADMIN_TOKEN, Stack


def _connect_kwargs(database_url: str) -> dict[str, Any]:
    url = make_url(database_url)
    kw: dict[str, Any] = {"user": url.username or "postgres", "database": url.database}
    if url.password:
        kw["password"] = url.password
    if url.query.get("host"):
        kw["host"] = url.query["host"]
    else:
        kw.update(host=url.host, port=url.port or 5432)
    return kw


async def _fetch(stack: Stack, sql: str, *args: Any) -> list[dict[str, Any]]:
    conn = await asyncpg.connect(**_connect_kwargs(stack.stores.database_url))
    await conn.set_type_codec("jsonb", encoder=json.dumps, decoder=json.loads, schema="pg_catalog")
    try:
        return [dict(r) for r in await conn.fetch(sql, *args)]
    finally:
        await conn.close()


def run_async(coro: Any) -> Any:
    """Run a coroutine on a fresh loop in a worker thread (safe beside Playwright's loop)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def db(stack: Stack, sql: str, *args: Any) -> list[dict[str, Any]]:
    """Run one statement against the suite's database (a test's view from outside)."""
    return run_async(_fetch(stack, sql, *args))


def control_events(stack: Stack, tenant_id: str, kinds: set[str], timeout: float = 15.0) -> list[dict]:
    """Control events for a tenant read back from Kafka, until every kind was seen."""

    async def read() -> list[dict]:
        consumer = AIOKafkaConsumer(
            "sluice.control.events",
            bootstrap_servers=stack.stores.kafka_bootstrap,
            group_id=f"test-{uuid.uuid4().hex}",
            auto_offset_reset="earliest",
            fetch_max_wait_ms=50,
        )
        await consumer.start()
        found: list[dict] = []
        try:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and not kinds <= {e["kind"] for e in found}:
                batches = await consumer.getmany(timeout_ms=500)
                for records in batches.values():
                    for rec in records:
                        ev = msgspec.json.decode(rec.value)
                        if ev.get("tenant_id") == tenant_id:
                            found.append(ev)
        finally:
            await consumer.stop()
        return found

    return run_async(read())


def admin_ok(stack: Stack, action: str, token: str = ADMIN_TOKEN, **fields: Any) -> dict[str, Any]:
    r = stack.admin_call(action, token=token, **fields)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["success"] is True
    return body["data"]


def admin_error(
    stack: Stack, action: str, expect: int, /, token: str = ADMIN_TOKEN, **fields: Any
) -> dict[str, Any]:
    r = stack.admin_call(action, token=token, **fields)
    assert r.status_code == expect, r.text
    body = r.json()
    assert body["success"] is False
    assert body["error"]["details"]["request_id"] == r.headers["x-request-id"]
    return body["error"]


def events_for(stack: Stack, match: dict[str, Any], timeout: float = 15.0) -> list[dict]:
    """Domain events on ``sluice.events`` whose ``data`` contains every item of ``match``."""

    async def read() -> list[dict]:
        consumer = AIOKafkaConsumer(
            "sluice.events",
            bootstrap_servers=stack.stores.kafka_bootstrap,
            group_id=f"test-{uuid.uuid4().hex}",
            auto_offset_reset="earliest",
            fetch_max_wait_ms=50,
        )
        await consumer.start()
        found: list[dict] = []
        try:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and not found:
                batches = await consumer.getmany(timeout_ms=500)
                for records in batches.values():
                    for rec in records:
                        ev = msgspec.json.decode(rec.value)
                        data = ev.get("data") or {}
                        if all(data.get(k) == v for k, v in match.items()):
                            found.append(ev)
        finally:
            await consumer.stop()
        return found

    return run_async(read())

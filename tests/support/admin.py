"""Helpers for the admin and onboarding tests: direct reads of the database and of Kafka."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import msgspec
from aiokafka import AIOKafkaConsumer

from tests.conftest import ADMIN_TOKEN, Stack, Tenant
from tests.support.db import fetch, run_async


def db(stack: Stack, sql: str, *args: Any) -> list[dict[str, Any]]:
    """Run one statement against the suite's database (a test's view from outside)."""
    return run_async(fetch(stack.stores.database_url, sql, *args))


Statement = tuple[Any, ...]  # (sql, *args)


@contextmanager
def tampered(
    stack: Stack, change: Sequence[Statement], undo: Sequence[Statement], triggers_off: Sequence[str] = ()
) -> Iterator[None]:
    """Rows changed by SQL behind Sluice's back for the body (the check that must catch it),
    then put back. Append-only tables refuse changes (triggers): ``triggers_off`` names those
    switched off meanwhile, as only someone who could switch them off could change them."""
    for table in triggers_off:
        db(stack, f"ALTER TABLE {table} DISABLE TRIGGER USER")
    try:
        for sql, *args in change:
            db(stack, sql, *args)
        try:
            yield
        finally:
            for sql, *args in undo:
                db(stack, sql, *args)
    finally:
        for table in triggers_off:
            db(stack, f"ALTER TABLE {table} ENABLE TRIGGER USER")


async def _read(
    stack: Stack,
    topic: str,
    keep: Callable[[dict], bool],
    done: Callable[[list[dict]], bool],
    timeout: float,
) -> list[dict]:
    """The records of ``topic`` (from its start) that ``keep`` accepts, read until ``done``
    says enough or ``timeout`` runs out (on the in-process tier, from its in-memory bus)."""
    bus = getattr(stack, "bus", None)
    if bus is not None:
        return await _read_bus(bus, topic, keep, done, timeout)
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=stack.stores.kafka_bootstrap,
        group_id=f"test-{uuid.uuid4().hex}",
        auto_offset_reset="earliest",
        fetch_max_wait_ms=50,
    )
    await consumer.start()
    found: list[dict] = []
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not done(found):
            batches = await consumer.getmany(timeout_ms=500)
            for records in batches.values():
                for rec in records:
                    ev = msgspec.json.decode(rec.value)
                    if keep(ev):
                        found.append(ev)
    finally:
        await consumer.stop()
    return found


async def _read_bus(
    bus: Any, topic: str, keep: Callable[[dict], bool], done: Callable[[list[dict]], bool], timeout: float
) -> list[dict]:
    deadline = time.monotonic() + timeout
    while True:
        found = [ev for rec in bus.since(0, {topic}) if keep(ev := msgspec.json.decode(rec.value))]
        if done(found) or time.monotonic() >= deadline:
            return found
        await asyncio.sleep(0.05)


def control_events(stack: Stack, tenant_id: str, kinds: set[str], timeout: float = 15.0) -> list[dict]:
    """Control events for a tenant read back from Kafka, until every kind was seen."""
    return run_async(
        _read(
            stack,
            "sluice.control.events",
            lambda ev: ev.get("tenant_id") == tenant_id,
            lambda found: kinds <= {e["kind"] for e in found},
            timeout,
        )
    )


def admin_ok(stack: Stack, action: str, token: str = ADMIN_TOKEN, **fields: Any) -> dict[str, Any]:
    r = stack.admin_call(action, token=token, **fields)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["success"] is True
    return body["data"]


def approved_ach_account(
    stack: Stack, tenant_id: str, customer_id: str, routing_number: str = "021000021"
) -> str:
    """An approved sandbox ACH external account of the customer, made by the operator: its id."""
    data = admin_ok(
        stack,
        "upsert_external_account",
        tenant_id=tenant_id,
        mode="sandbox",
        customer_id=customer_id,
        rail="ach",
        currency="USD",
        account_number="000123456789",
        routing_number=routing_number,
        approved=True,
    )
    return str(data["external_account_id"])


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

    def matches(ev: dict) -> bool:
        data = ev.get("data") or {}
        return all(data.get(k) == v for k, v in match.items())

    return run_async(_read(stack, "sluice.events", matches, bool, timeout))


def access_token(stack: Stack, t: Tenant) -> tuple[Tenant, str]:
    """A sandbox access token (customers:write) issued by admin for ``t``: the tenant holding
    it as its key, and the token's jti."""
    issued = admin_ok(
        stack, "issue_access_token", tenant_id=t.tenant_id, mode="sandbox", scopes=["customers:write"]
    )
    assert len(issued["jti"]) == 32
    return t.with_key(issued["access_token"]), issued["jti"]


def health_statuses(t: Tenant) -> set[int]:
    """What both gateways answer ``t`` on GET /v1/health."""
    return {t.get("/v1/health", gateway=gw).status_code for gw in (0, 1)}

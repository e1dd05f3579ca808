"""Helpers for the gateway tests (no tests here): raw calls in both access forms, a Kafka tap
on the command topics, JWTs minted with the suite's derived secret, and database counts."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
from aiokafka import AIOKafkaConsumer, TopicPartition

from common.auth import issue_access_token, new_jti
from common.contracts import decode
from common.contracts.base import Command
from common.settings import Settings
from common.topics import Topics
from tests.conftest import Stack, Tenant
from tests.support.db import pg_connect, run_async
from tests.support.kafka import partitions

TOPICS = Topics("sluice")


def suite_settings(stack: Stack) -> Settings:
    return stack.settings()


def jwt_for(
    stack: Stack,
    tenant_id: str,
    mode: str = "sandbox",
    scopes: list[str] | None = None,
    ttl: int = 600,
    secret: bytes | None = None,
    issuer: str | None = None,
    record: bool = True,
) -> str:
    """A token minted here with the suite's secret and, with ``record``, its jti recorded in
    identity.access_tokens as admin's issue_access_token records it (the gateway refuses a
    token admin never recorded: docs/security.md); ``tenant_id`` must then be a tenant's id."""
    s = suite_settings(stack)
    jti = new_jti()
    token, exp = issue_access_token(
        secret or s.jwt_key,
        issuer or s.jwt_issuer,
        tenant_id,
        mode,
        scopes if scopes is not None else [],
        ttl,
        jti=jti,
    )
    if record:
        record_access_token(stack, jti, tenant_id, mode, exp)
    return token


def record_access_token(stack: Stack, jti: str, tenant_id: str, mode: str, exp: int) -> None:
    """The row admin writes when it issues an access token (identity.access_tokens)."""

    async def insert() -> None:
        conn = await pg_connect(stack.stores.database_url)
        try:
            await conn.execute(
                "INSERT INTO identity.access_tokens (jti, tenant_id, mode, expires_at, created_at)"
                " VALUES ($1, $2, $3, $4, now())",
                jti,
                uuid.UUID(tenant_id),
                mode,
                datetime.fromtimestamp(exp, UTC),
            )
        finally:
            await conn.close()

    run_async(insert())


def call(
    stack: Stack,
    method: str,
    path: str,
    *,
    key: str | None,
    body: Any = None,
    idem: str | None = None,
    gateway: int = 0,
    raw: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    """The direct form."""
    h = {"Content-Type": "application/json"}
    if key:
        h["Authorization"] = f"Bearer {key}"
    if idem:
        h["Idempotency-Key"] = idem
    h.update(headers or {})
    content = raw if raw is not None else (None if body is None else _json(body))
    return httpx.request(method, stack.gateways[gateway].url + path, content=content, headers=h, timeout=30)


def routed(
    stack: Stack,
    method: str,
    path: str,
    *,
    body: Any = None,
    headers: dict[str, str] | None = None,
    **kw: Any,
) -> httpx.Response:
    """The routed form: POST / with x-service-route; reads send {"method": "GET"}. The other
    keywords (``key``, ``idem``, ``gateway``, ``raw``) are :func:`call`'s."""
    payload = {"method": "GET"} if method == "GET" else body
    return call(stack, "POST", "/", body=payload, headers={"x-service-route": path, **(headers or {})}, **kw)


def _json(body: Any) -> bytes:
    import json

    return json.dumps(body).encode()


def post(
    t: Tenant,
    path: str,
    body: Any,
    idem: str | None = "auto",
    gateway: int = 0,
    form: str = "direct",
    **headers: str,
) -> httpx.Response:
    fn = routed if form == "routed" else call
    key = uuid.uuid4().hex if idem == "auto" else idem
    return fn(t.stack, "POST", path, key=t.key, body=body, idem=key, gateway=gateway, headers=headers)


def assert_error(r: httpx.Response, status: int, code: str, field: str | None = None) -> dict[str, Any]:
    assert r.status_code == status, (r.status_code, r.text)
    body = r.json()
    assert body["success"] is False, r.text
    assert body["error"]["code"] == code, r.text
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    assert body["error"]["details"]["request_id"] == r.headers["x-request-id"]
    if field is not None:
        assert body["error"]["details"].get("field") == field, r.text
    return body["error"]


@dataclass
class Refused:
    """A request body the gateway must refuse with 400 invalid_request naming ``field``;
    ``label`` names it in a miss, ``idem`` gives each attempt its Idempotency-Key."""

    path: str
    content: str | bytes
    field: str
    label: str
    idem: Callable[[], str] = lambda: uuid.uuid4().hex


def misses_in_both_forms(
    stack: Stack, key: str, cases: list[Refused], concurrency: int, max_bytes: int | None = None
) -> list[str]:
    """Every case POSTed in both forms (direct to the first gateway, routed to the second),
    ``concurrency`` at a time; one line for each answer that is not the refusal (or is longer
    than ``max_bytes``)."""

    async def one(client: httpx.AsyncClient, sem: asyncio.Semaphore, form: str, case: Refused) -> str | None:
        headers = {
            "Authorization": f"Bearer {key}",
            "Content-Type": "application/json",
            "Idempotency-Key": case.idem(),
        }
        url = stack.gateway + case.path
        if form == "routed":
            url, headers["x-service-route"] = stack.gateways[1].url + "/", case.path
        async with sem:
            r = await client.post(url, content=case.content, headers=headers)
        try:
            assert_error(r, 400, "invalid_request", case.field)
            if max_bytes is not None:
                assert len(r.content) < max_bytes, len(r.content)
        except AssertionError as exc:
            return f"{form} {case.label} -> {exc}"
        return None

    async def run() -> list[str]:
        sem = asyncio.Semaphore(concurrency)
        async with httpx.AsyncClient(timeout=60) as client:
            out = await asyncio.gather(
                *(one(client, sem, form, c) for c in cases for form in ("direct", "routed"))
            )
        return [o for o in out if o]

    return asyncio.run(run())


def fetchval(stack: Stack, sql: str, *args: Any) -> Any:
    async def run() -> Any:
        conn = await pg_connect(stack.stores.database_url)
        try:
            return await conn.fetchval(sql, *args)
        finally:
            await conn.close()

    return asyncio.run(run())


class Tap:
    """Reads a command topic from its end at creation, to see what the gateway published.

    Each ``find`` reads with a fresh consumer from where the last one stopped (a consumer kept
    across finds sat on a stopped event loop in between). Late in the full suite's run, on a
    long topic, a find still read nothing for 45 s though the command had been published and
    handled, with either form; why is not known. So the tap serves the early gateway tests
    that check what was published, and a test that can check what was stored reads the store
    instead (test_security_numbers). On the in-process tier (tests/inprocess) the topic is the
    in-memory bus's, read from the record the tap was made at."""

    def __init__(self, stack: Stack, topic: str) -> None:
        self.stack = stack
        self.topic = topic
        self.loop = asyncio.new_event_loop()
        self.offsets: dict[TopicPartition, int] = {}
        self.seen: list[Command] = []
        self.bus = getattr(stack, "bus", None)
        self.mark = len(self.bus.records) if self.bus is not None else 0
        if self.bus is None:
            self.loop.run_until_complete(self._start())

    def _consumer(self) -> AIOKafkaConsumer:
        return AIOKafkaConsumer(
            bootstrap_servers=self.stack.stores.kafka_bootstrap,
            enable_auto_commit=False,
            group_id=None,
            fetch_max_wait_ms=5,
        )

    async def _start(self) -> None:
        consumer = self._consumer()
        await consumer.start()
        try:
            found = await partitions(self.stack.stores.kafka_bootstrap, self.topic)
            tps = [TopicPartition(self.topic, p) for p in found]
            consumer.assign(tps)
            await consumer.seek_to_end(*tps)
            for tp in tps:
                self.offsets[tp] = await consumer.position(tp)
        finally:
            await consumer.stop()

    def find(self, request_id: str, timeout: float = 10.0) -> list[Command]:
        """Every command on the topic whose ctx.request_id is ``request_id``."""
        from common.contracts import ComplianceCommand, LedgerCommand, WebhooksCommand
        from common.contracts.commands import ReleaseAllowance

        union = ComplianceCommand | LedgerCommand | WebhooksCommand

        async def from_bus() -> None:
            assert self.bus is not None
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                published = self.bus.since(self.mark)
                self.mark += len(published)
                for rec in (r for r in published if r.topic == self.topic):
                    with contextlib.suppress(Exception):  # other messages are not our concern
                        self.seen.append(decode(rec.value or b"", union))  # type: ignore[arg-type]
                if any(c.ctx.request_id == request_id for c in self.seen):
                    return
                await asyncio.sleep(0.02)

        async def run() -> None:
            consumer = self._consumer()
            await consumer.start()
            try:
                consumer.assign(list(self.offsets))
                for tp, offset in self.offsets.items():
                    consumer.seek(tp, offset)
                deadline = time.monotonic() + timeout
                while time.monotonic() < deadline:
                    batches = await consumer.getmany(timeout_ms=200)
                    for tp, recs in batches.items():
                        for rec in recs:
                            self.offsets[tp] = rec.offset + 1
                            with contextlib.suppress(Exception):  # other messages are not our concern
                                self.seen.append(decode(rec.value or b"", union))  # type: ignore[arg-type]
                    if any(c.ctx.request_id == request_id for c in self.seen):
                        return
            finally:
                await consumer.stop()

        self.loop.run_until_complete(from_bus() if self.bus is not None else run())
        # A ledger that refuses a transfer gives its cap allowance back with a command of its
        # own (ReleaseAllowance) carrying the same request id: not what the gateway published.
        return [
            c for c in self.seen if c.ctx.request_id == request_id and not isinstance(c, ReleaseAllowance)
        ]

    def close(self) -> None:
        self.loop.close()

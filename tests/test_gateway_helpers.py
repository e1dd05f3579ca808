"""Helpers for the gateway tests (no tests here): raw calls in both access forms, a Kafka tap
on the command topics, JWTs minted with the suite's derived secret, and database counts."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import asyncpg
import httpx
from aiokafka import AIOKafkaConsumer, TopicPartition
from sqlalchemy.engine import make_url

from common.auth import issue_access_token
from common.contracts import decode
from common.contracts.base import Command
from common.settings import Settings
from common.topics import Topics
from tests.conftest import Stack, Tenant

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
) -> str:
    s = suite_settings(stack)
    token, _ = issue_access_token(
        secret or s.jwt_key,
        issuer or s.jwt_issuer,
        tenant_id,
        mode,
        scopes if scopes is not None else [],
        ttl,
    )
    return token


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
    key: str | None,
    body: Any = None,
    idem: str | None = None,
    gateway: int = 0,
    raw: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    """The routed form: POST / with x-service-route; reads send {"method": "GET"}."""
    payload = {"method": "GET"} if method == "GET" else body
    return call(
        stack,
        "POST",
        "/",
        key=key,
        body=payload,
        idem=idem,
        gateway=gateway,
        raw=raw,
        headers={"x-service-route": path, **(headers or {})},
    )


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


async def _pg(stack: Stack) -> asyncpg.Connection:
    url = make_url(stack.stores.database_url)
    kw: dict[str, Any] = {"user": url.username or "postgres", "database": url.database}
    if url.query.get("host"):
        kw["host"] = url.query["host"]
    else:
        kw.update(host=url.host, port=url.port or 5432)
    return await asyncpg.connect(**kw)


def fetchval(stack: Stack, sql: str, *args: Any) -> Any:
    async def run() -> Any:
        conn = await _pg(stack)
        try:
            return await conn.fetchval(sql, *args)
        finally:
            await conn.close()

    return asyncio.run(run())


class Tap:
    """Reads a command topic from its current end, to see what the gateway published."""

    def __init__(self, stack: Stack, topic: str) -> None:
        self.stack = stack
        self.topic = topic
        self.loop = asyncio.new_event_loop()
        self.consumer: AIOKafkaConsumer | None = None
        self.seen: list[Command] = []
        self.loop.run_until_complete(self._start())

    async def _start(self) -> None:
        self.consumer = AIOKafkaConsumer(
            bootstrap_servers=self.stack.stores.kafka_bootstrap,
            enable_auto_commit=False,
            group_id=None,
            fetch_max_wait_ms=5,
        )
        await self.consumer.start()
        parts = self.consumer.partitions_for_topic(self.topic) or set()
        if not parts:
            await self.consumer.force_metadata_update()  # type: ignore[attr-defined]
            parts = self.consumer.partitions_for_topic(self.topic) or set()
        tps = [TopicPartition(self.topic, p) for p in sorted(parts)]
        self.consumer.assign(tps)
        await self.consumer.seek_to_end(*tps)
        for tp in tps:
            await self.consumer.position(tp)

    def find(self, request_id: str, timeout: float = 10.0) -> list[Command]:
        """Every command on the topic whose ctx.request_id is ``request_id``."""
        from common.contracts import ComplianceCommand, LedgerCommand, WebhooksCommand
        from common.contracts.commands import ReleaseAllowance

        union = ComplianceCommand | LedgerCommand | WebhooksCommand

        async def run() -> None:
            assert self.consumer is not None
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                batches = await self.consumer.getmany(timeout_ms=200)
                for recs in batches.values():
                    for rec in recs:
                        try:
                            self.seen.append(decode(rec.value or b"", union))  # type: ignore[arg-type]
                        except Exception:  # noqa: BLE001 - other messages are not our concern
                            pass
                if any(c.ctx.request_id == request_id for c in self.seen):
                    return

        self.loop.run_until_complete(run())
        # A ledger that refuses a transfer gives its cap allowance back with a command of its
        # own (ReleaseAllowance) carrying the same request id: not what the gateway published.
        return [
            c for c in self.seen if c.ctx.request_id == request_id and not isinstance(c, ReleaseAllowance)
        ]

    def close(self) -> None:
        assert self.consumer is not None
        self.loop.run_until_complete(self.consumer.stop())
        self.loop.close()

"""Test helpers for the webhooks suites: a real HTTP receiver, an RPC client for webhook
commands over Kafka, and direct reads of the webhooks schema."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, NamedTuple

import asyncpg
import msgspec

from common.broker import create_broker
from common.contracts import Ctx, Result
from common.contracts.commands import CreateWebhook, RotateWebhookSecret
from common.contracts.events import CustomerCreated
from common.ids import new_id
from common.keyring import KeyRing, open_reply_secrets
from common.rpc import RpcClient
from common.settings import Settings
from common.topics import Topics
from tests.conftest import Stack, Tenant, customer_body, make_tenant
from tests.support.db import pg_connect
from tools.stack.processes import free_port


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes
    at: float
    answered: int


def standard_headers(r: Received) -> dict[str, str]:
    """Our header names renamed to the Standard Webhooks ones."""
    return {
        "webhook-id": r.headers["x-service-webhook-id"],
        "webhook-timestamp": r.headers["x-service-timestamp"],
        "webhook-signature": r.headers["x-service-signature"],
    }


@dataclass
class Receiver:
    """A stdlib HTTP server in a thread. ``plan`` gives the status of successive requests
    (then ``default``); ``delay_s`` holds each request before answering."""

    plan: list[int] = field(default_factory=list)
    default: int = 200
    delay_s: float = 0.0
    port: int = field(default_factory=free_port)
    received: list[Received] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                at = time.time()
                with receiver._lock:
                    n = len(receiver.received)
                    status = receiver.plan[n] if n < len(receiver.plan) else receiver.default
                    receiver.received.append(
                        Received({k.lower(): v for k, v in self.headers.items()}, body, at, status)
                    )
                if receiver.delay_s:
                    time.sleep(receiver.delay_s)
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: Any) -> None:
                pass

        self._handler = Handler
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def start(self) -> Receiver:
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), self._handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def for_event(self, event_id: str) -> list[Received]:
        return [r for r in list(self.received) if r.headers.get("x-service-webhook-id") == event_id]

    async def wait_for(self, n: int, timeout: float = 30.0, event_id: str | None = None) -> list[Received]:
        deadline = time.monotonic() + timeout
        while True:
            got = self.for_event(event_id) if event_id else list(self.received)
            if len(got) >= n or time.monotonic() > deadline:
                return got
            await asyncio.sleep(0.05)


class WebhookCommands:
    """Publishes webhook commands to Topics.webhooks_commands and awaits their Result."""

    def __init__(self, stack: Stack, prefix: str = "sluice") -> None:
        self.settings = Settings(
            kafka_bootstrap=stack.stores.kafka_bootstrap,
            topic_prefix=prefix,
            instance_id="test-webhooks-" + uuid.uuid4().hex[:8],
        )
        self.topic = Topics(self.settings.topic_prefix).webhooks_commands
        self.ring = KeyRing.parse(stack.env["SLUICE_ENCRYPTION_KEYS"])
        self.broker = create_broker(self.settings, "test-webhooks")
        self.rpc = RpcClient(self.broker, self.settings, "test-webhooks")

    async def start(self) -> None:
        await self.broker.start()
        await self.rpc.start()

    async def stop(self) -> None:
        await self.rpc.stop()
        await self.broker.stop()

    def ctx(self, tenant_id: str, mode: str = "sandbox") -> Ctx:
        return Ctx(
            request_id="req_" + uuid.uuid4().hex,
            tenant_id=tenant_id,
            mode=mode,  # type: ignore[arg-type]
            reply_to=self.rpc.reply_topic,
        )

    async def call(self, cls: type, tenant_id: str, mode: str = "sandbox", **fields: Any) -> Result:
        cmd = cls(command_id=uuid.uuid4().hex, ctx=self.ctx(tenant_id, mode), **fields)
        result = await self.rpc.call(self.topic, cmd, key=tenant_id, timeout=20)
        # Secrets ride sealed on the reply topic; open them as the gateway does.
        opened = open_reply_secrets(self.ring, result.data, result.sealed, cmd.command_id)
        return msgspec.structs.replace(result, data=opened, sealed=None)

    async def create(self, tenant_id: str, url: str, mode: str = "sandbox") -> Result:
        return await self.call(CreateWebhook, tenant_id, mode, webhook_id=new_id("we"), endpoint_url=url)

    async def rotate(self, tenant_id: str, webhook_id: str) -> Result:
        return await self.call(RotateWebhookSecret, tenant_id, webhook_id=webhook_id)


@asynccontextmanager
async def webhook_commands(stack: Stack, prefix: str = "sluice") -> AsyncIterator[WebhookCommands]:
    client = WebhookCommands(stack, prefix)
    await client.start()
    try:
        yield client
    finally:
        await client.stop()


async def connect_db(stack: Stack) -> asyncpg.Connection:
    return await pg_connect(stack.stores.database_url)


async def _rows(stack: Stack, sql: str, *args: Any) -> list[asyncpg.Record]:
    conn = await connect_db(stack)
    try:
        return await conn.fetch(sql, *args)
    finally:
        await conn.close()


async def deliveries_of(stack: Stack, webhook_id: str) -> list[asyncpg.Record]:
    return await _rows(
        stack, "SELECT * FROM webhooks.deliveries WHERE webhook_id = $1 ORDER BY id", webhook_id
    )


async def attempts_of(stack: Stack, delivery_id: str) -> list[asyncpg.Record]:
    return await _rows(
        stack, "SELECT * FROM webhooks.attempts WHERE delivery_id = $1 ORDER BY attempt", delivery_id
    )


async def wait_delivery(
    stack: Stack, webhook_id: str, status: str, timeout: float = 30.0, count: int = 1
) -> list[asyncpg.Record]:
    """Wait until ``count`` deliveries of the endpoint have ``status``; returns them all.
    Fails the test when they do not within ``timeout`` (it used to return what it had, so a
    caller's check of the rows could pass on a timeout)."""
    deadline = time.monotonic() + timeout
    while True:
        rows = await deliveries_of(stack, webhook_id)
        if sum(1 for r in rows if r["status"] == status) >= count:
            return rows
        if time.monotonic() > deadline:
            seen = sorted(str(r["status"]) for r in rows)
            raise AssertionError(f"{count} {status} deliveries of {webhook_id} not in {timeout} s: {seen}")
        await asyncio.sleep(0.2)


async def mark_failing_for_days(stack: Stack, webhook_id: str, days: int = 6) -> None:
    """Pretend the endpoint has been failing for ``days`` (disable_after_s is five days): the
    next failed attempt recorded disables it and dead-letters what is pending.

    Mark it before its deliveries are attempted: marked after the first attempt, a delivery
    can run out of attempts first (the stack retries after 1, 1, 1 s) when the test process
    is slow to mark, and a delivery dead of exhaustion disables nothing."""
    conn = await connect_db(stack)
    try:
        await conn.execute(
            "UPDATE webhooks.endpoints SET failing_since = now() - make_interval(days => $2) WHERE id = $1",
            webhook_id,
            days,
        )
    finally:
        await conn.close()


async def wait_disabled(
    stack: Stack, webhook_id: str, timeout: float, count: int = 1
) -> tuple[list[asyncpg.Record], asyncpg.Record]:
    """Wait until the endpoint is disabled and ``count`` of its deliveries are dead; the
    deliveries and the endpoint's row. Fails the test when not within ``timeout``."""
    deadline = time.monotonic() + timeout
    conn = await connect_db(stack)
    try:
        while True:
            endpoint = await conn.fetchrow("SELECT * FROM webhooks.endpoints WHERE id = $1", webhook_id)
            rows = await conn.fetch(
                "SELECT * FROM webhooks.deliveries WHERE webhook_id = $1 ORDER BY id", webhook_id
            )
            dead = sum(1 for r in rows if r["status"] == "dead")
            if not endpoint["enabled"] and dead >= count:
                return rows, endpoint
            if time.monotonic() > deadline:
                statuses = sorted(str(r["status"]) for r in rows)
                raise AssertionError(
                    f"endpoint {webhook_id} enabled={endpoint['enabled']}"
                    f" failing_since={endpoint['failing_since']}, deliveries {statuses}:"
                    f" not disabled with {count} dead in {timeout} s"
                )
            await asyncio.sleep(0.2)
    finally:
        await conn.close()


class Endpoint(NamedTuple):
    tenant: Tenant
    receiver: Receiver
    wh: WebhookCommands
    created: Result


@asynccontextmanager
async def endpoint(stack: Stack, receiver: Receiver | None = None) -> AsyncIterator[Endpoint]:
    """A fresh tenant with one webhook endpoint (made over Kafka) that points at ``receiver``
    (a plain one by default), started here and stopped after; the command client stays open."""
    tenant = make_tenant(stack)
    receiver = (receiver or Receiver()).start()
    try:
        async with webhook_commands(stack) as wh:
            yield Endpoint(tenant, receiver, wh, await wh.create(tenant.tenant_id, receiver.url))
    finally:
        receiver.stop()


def customer_created(tenant_id: str, customer_id: str) -> CustomerCreated:
    """A sandbox ``customer.created`` event of the tenant, as the ledger publishes it: signed
    with the ledger's key (webhooks dead-letters an unsigned one, ``authority_invalid``)."""
    from tests.support.ledger import ledger_key

    return ledger_key().sign(
        CustomerCreated(
            event_id=new_id("evt"),
            tenant_id=tenant_id,
            mode="sandbox",
            created_at="2026-01-01T00:00:00Z",
            data={"customer_id": customer_id},
        )
    )


async def create_customer(tenant: Any) -> str:
    r = await asyncio.to_thread(tenant.post, "/v1/customers", customer_body())
    assert r.status_code == 201, r.text
    return str(r.json()["data"]["customer_id"])


class FastReceiver:
    """An uvicorn server (keep-alive, httptools) in a thread that answers 200 at once and
    records when each event id arrived; ``delay_s`` holds every answer (a slow endpoint).
    ``max_in_flight``: per query string (tests give endpoints their own), the most requests it
    held at once (read, not yet answered); ``peak``: the same over all."""

    def __init__(self, delay_s: float = 0.0) -> None:
        self.port = free_port()
        self.delay_s = delay_s
        self.arrived: dict[str, float] = {}
        self.requests = 0
        self.in_flight: dict[bytes, int] = {}
        self.max_in_flight: dict[bytes, int] = {}
        self.peak = 0
        self.connections: set[tuple[str, int]] = set()
        self._server: Any = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    async def _app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        more = True
        while more:
            msg = await receive()
            more = msg.get("more_body", False)
        qs = scope.get("query_string", b"")  # one thread, one event loop: no lock needed
        self.in_flight[qs] = self.in_flight.get(qs, 0) + 1
        self.max_in_flight[qs] = max(self.max_in_flight.get(qs, 0), self.in_flight[qs])
        self.peak = max(self.peak, sum(self.in_flight.values()))
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        self.in_flight[qs] -= 1  # answered from here on
        self.requests += 1
        client = scope.get("client")
        if client:
            self.connections.add((client[0], client[1]))
        for name, value in scope["headers"]:
            if name == b"x-service-webhook-id":
                self.arrived.setdefault(value.decode(), time.time())
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})

    def start(self) -> FastReceiver:
        import uvicorn

        config = uvicorn.Config(
            self._app,
            host="127.0.0.1",
            port=self.port,
            log_level="warning",
            lifespan="off",
            access_log=False,
            interface="asgi3",
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        assert self._server.started, "receiver did not start"
        return self

    def stop(self) -> None:
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(timeout=10)
            self._server = None


class Blackhole:
    """A TCP listener that accepts connections and never answers: a down endpoint whose
    every attempt runs into the timeout."""

    def __init__(self) -> None:
        self.port = free_port()
        self.accepted = 0
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._held: list[socket.socket] = []
        self._stopped = False

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def start(self) -> Blackhole:
        self._sock.bind(("127.0.0.1", self.port))
        self._sock.listen(1024)
        self._sock.settimeout(0.2)

        def accept() -> None:
            while not self._stopped:
                try:
                    conn, _ = self._sock.accept()
                except OSError:
                    continue
                self.accepted += 1
                self._held.append(conn)

        threading.Thread(target=accept, daemon=True).start()
        return self

    def stop(self) -> None:
        self._stopped = True
        for c in self._held:
            c.close()
        self._sock.close()


async def insert_backlog(
    conn: asyncpg.Connection, tenant_id: str, webhook_id: str, n: int, *, mode: str = "sandbox", tag: str = ""
) -> list[str]:
    """``n`` stored events with one pending delivery each to ``webhook_id``, due now, written
    in one statement (the fan-out's result, without going through Kafka). Event ids returned."""
    tag = tag or uuid.uuid4().hex[:8]
    rows = await conn.fetch(
        """WITH ev AS (
            INSERT INTO webhooks.events (event_id, tenant_id, mode, type, body)
            SELECT 'evt_' || $3::text || lpad(g::text, 7, '0'), $1::text, $4::text, 'customer.created',
                   convert_to(json_build_object('id', 'evt_' || $3::text || lpad(g::text, 7, '0'),
                       'type', 'customer.created', 'mode', $4::text,
                       'data', json_build_object())::text, 'UTF8')
            FROM generate_series(1, $2::int) g RETURNING event_id)
        INSERT INTO webhooks.deliveries (id, event_id, webhook_id, tenant_id, mode, event_type, max_attempts)
        SELECT 'dlv_' || event_id, event_id, $5::text, $1::text, $4::text, 'customer.created', 4 FROM ev
        RETURNING event_id""",
        tenant_id,
        n,
        tag,
        mode,
        webhook_id,
    )
    return [r["event_id"] for r in rows]

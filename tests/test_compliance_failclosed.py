"""Fail closed: a compliance process whose PostgreSQL becomes unreachable answers every
command 503 within seconds and forwards nothing; when the store returns, it decides again.

The process runs on its own topic prefix against a second database reached through a TCP
proxy the test controls: ``cut`` refuses new connections and severs the open ones (the
database host is gone), ``blackhole`` accepts connections and never answers (a partition).
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy.engine import make_url

from common.contracts.commands import ApproveRoute, CreateCustomer, ListDecisions
from common.db import migrate
from devstack.stores import create_database, drop_database, free_port
from tests.conftest import Stack
from tests.test_compliance_kit import Probe, db_connect, start_private_compliance, uid

pytestmark = pytest.mark.integration

PREFIX = "cfc" + uuid.uuid4().hex[:6]
GATEWAY_TIMEOUT_S = 10.0


class StoreProxy:
    """A TCP proxy to PostgreSQL on its own thread and event loop."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.port = free_port()
        self.mode = "pass"  # pass | blackhole
        self.loop = asyncio.new_event_loop()
        self.server: asyncio.Server | None = None
        self.writers: set[asyncio.StreamWriter] = set()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()

    def _call(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(10)

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.writers.add(writer)
        if self.mode == "blackhole":
            await reader.read()  # hold the connection, answer nothing
            return
        try:
            up_r, up_w = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            return
        self.writers.add(up_w)
        await asyncio.gather(self._pipe(reader, up_w), self._pipe(up_r, writer))

    async def _start(self) -> None:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", self.port, reuse_address=True)

    async def _cut(self) -> None:
        if self.server is not None:
            self.server.close()
            self.server = None
        for w in list(self.writers):
            w.transport.abort()
        self.writers.clear()

    def start(self) -> None:
        self._call(self._cut())
        self.mode = "pass"
        self._call(self._start())

    def cut(self) -> None:
        self._call(self._cut())

    def blackhole(self) -> None:
        self._call(self._cut())
        self.mode = "blackhole"
        self._call(self._start())

    def close(self) -> None:
        self._call(self._cut())
        self.loop.call_soon_threadsafe(self.loop.stop)


@pytest.fixture(scope="module")
def store(stack: Stack) -> Iterator[tuple[StoreProxy, str, str]]:
    base = make_url(stack.stores.database_url)
    assert base.host, "the fail-closed test proxies a TCP PostgreSQL"
    direct = create_database(stack.stores.database_url, f"sluice_cfc_{uuid.uuid4().hex[:8]}")
    migrate("compliance", direct)
    proxy = StoreProxy(base.host, base.port or 5432)
    proxy.start()
    via_proxy = make_url(direct).set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
    procs = start_private_compliance(stack, PREFIX, extra={"SLUICE_DATABASE_URL": via_proxy})
    yield proxy, direct, procs[0].url
    for p in procs:
        stack.suite.stop_proc(p)
    proxy.close()
    drop_database(direct)


@pytest.fixture
async def probe(stack: Stack, store: tuple[StoreProxy, str, str]) -> AsyncIterator[Probe]:
    async with Probe(stack.stores.kafka_bootstrap, PREFIX) as p:
        yield p


def _commands(probe: Probe) -> list[Any]:
    t = uid("ten")
    return [
        CreateCustomer(
            command_id=uid("cmd"),
            ctx=probe.ctx(t),
            customer_id=uid("cus"),
            account_type="individual",
            email="a@example.com",
            country_code="US",
            service_user_id="u",
            full_name="A B",
        ),
        CreateCustomer(
            command_id=uid("cmd"),
            ctx=probe.ctx(t, "production", live=True),
            customer_id=uid("cus"),
            account_type="individual",
            email="a@example.com",
            country_code="JP",
            service_user_id="u",
            full_name="A B",
        ),
        probe.transfer(t, uid("wal"), uid("wal"), "1"),
        probe.payout(t, uid("wal"), uid("ea"), "1"),
        ApproveRoute(
            command_id=uid("cmd"), ctx=probe.ctx(t, "production", actor="ops"), rail="ach", currency="USD"
        ),
        ListDecisions(command_id=uid("cmd"), ctx=probe.ctx(t), target_tenant_id=t),
    ]


async def _assert_refused_and_nothing_forwarded(probe: Probe, direct_url: str) -> float:
    cmds = _commands(probe)
    started = time.monotonic()
    futs = await asyncio.gather(*(probe.publish(c) for c in cmds))
    seen = await asyncio.wait_for(asyncio.gather(*futs), GATEWAY_TIMEOUT_S + 5)
    elapsed = time.monotonic() - started
    for cmd, s in zip(cmds, seen, strict=True):
        r = s.reply  # a reply, never a forward
        assert r.status == 503, (type(cmd).__name__, r)
        assert r.error and r.error.code == "provider_unavailable"
        assert r.request_id == cmd.ctx.request_id
    await asyncio.sleep(1.0)  # nothing trickles out later either
    ids = {c.command_id for c in cmds}
    assert not [f for f in probe.forwards if f.command_id in ids]
    conn = await db_connect(direct_url)
    try:
        kept = await conn.fetchval(
            "SELECT count(*) FROM compliance.decisions WHERE command_id = ANY($1)", list(ids)
        )
    finally:
        await conn.close()
    assert kept == 0
    return elapsed


async def _decides_again(probe: Probe) -> None:
    deadline = time.monotonic() + 30
    while True:
        seen = await probe.submit(_commands(probe)[0])
        if seen.kind == "forward":
            return
        assert seen.reply.status == 503
        assert time.monotonic() < deadline, "compliance did not recover"
        await asyncio.sleep(0.5)


async def test_store_down_commands_answered_503_and_nothing_forwarded(
    probe: Probe, store: tuple[StoreProxy, str, str]
) -> None:
    proxy, direct, url = store
    assert (await probe.submit(_commands(probe)[0])).kind == "forward"
    proxy.cut()
    try:
        elapsed = await _assert_refused_and_nothing_forwarded(probe, direct)
        print(f"\nstore cut: 6 commands answered 503 in {elapsed:.2f}s")
        assert elapsed < GATEWAY_TIMEOUT_S, elapsed
        async with httpx.AsyncClient() as client:
            ready = await client.get(url + "/readyz", timeout=10)
        assert ready.status_code == 503
        assert ready.json()["checks"]["database"].startswith("unavailable")
        assert ready.json()["stats"]["failed_closed"] >= 6
    finally:
        proxy.start()
    await _decides_again(probe)


async def test_store_blackholed_commands_answered_503_before_the_gateway_gives_up(
    probe: Probe, store: tuple[StoreProxy, str, str]
) -> None:
    proxy, direct, _ = store
    assert (await probe.submit(_commands(probe)[0])).kind == "forward"
    proxy.blackhole()
    try:
        elapsed = await _assert_refused_and_nothing_forwarded(probe, direct)
        print(f"\nstore blackholed: 6 commands answered 503 in {elapsed:.2f}s")
        assert elapsed < GATEWAY_TIMEOUT_S, elapsed
    finally:
        proxy.start()
    await _decides_again(probe)

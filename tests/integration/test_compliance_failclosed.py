"""Fail closed under a transient fault: a compliance process whose PostgreSQL becomes
unreachable decides, forwards and answers nothing, reports not ready, and dead-letters
nothing; when the store returns it decides every waiting command exactly once.

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

from common.contracts.commands import ApproveRoute, ListDecisions
from common.db import migrate
from tests.conftest import Stack
from tests.support.compliance import Probe, private_compliance, uid
from tests.support.db import pg_connect
from tests.support.kafka import dead_letters
from tools.stack.processes import free_port
from tools.stack.stores import create_database, drop_database

pytestmark = pytest.mark.integration

PREFIX = "cfc" + uuid.uuid4().hex[:6]


class StoreProxy:
    """A TCP proxy to PostgreSQL (at ``host``:``port``, or at its Unix socket ``socket``) on its
    own thread and event loop."""

    def __init__(self, host: str, port: int, socket: str = "") -> None:
        self.target, self.socket = (host, port), socket
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
            if self.socket:
                up_r, up_w = await asyncio.open_unix_connection(self.socket)
            else:
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

    def _reopen(self, mode: str) -> None:
        self._call(self._cut())
        self.mode = mode
        self._call(self._start())

    def start(self) -> None:
        self._reopen("pass")

    def cut(self) -> None:
        self._call(self._cut())

    def blackhole(self) -> None:
        self._reopen("blackhole")

    def close(self) -> None:
        self._call(self._cut())
        self.loop.call_soon_threadsafe(self.loop.stop)


@pytest.fixture(scope="module")
def store(stack: Stack) -> Iterator[tuple[StoreProxy, str, str]]:
    base = make_url(stack.stores.database_url)
    direct = create_database(stack.stores.database_url, f"sluice_cfc_{uuid.uuid4().hex[:8]}")
    migrate("admin", direct)  # identity.tenants: compliance reads whether a tenant is disabled
    migrate("compliance", direct)
    # the embedded PostgreSQL listens on a Unix socket only (pgserver): the proxy is the TCP side
    directory = str(base.query.get("host", ""))
    socket = f"{directory}/.s.PGSQL.{base.port or 5432}" if directory.startswith("/") else ""
    proxy = StoreProxy(base.host or "127.0.0.1", base.port or 5432, socket)
    proxy.start()
    tcp = make_url(direct).difference_update_query(["host"])
    via_proxy = tcp.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
    with private_compliance(stack, PREFIX, extra={"SLUICE_DATABASE_URL": via_proxy}) as procs:
        yield proxy, direct, procs[0].url
    proxy.close()
    drop_database(direct)


@pytest.fixture
async def probe(stack: Stack, store: tuple[StoreProxy, str, str]) -> AsyncIterator[Probe]:
    async with Probe(stack.stores.kafka_bootstrap, PREFIX) as p:
        yield p


def _commands(probe: Probe) -> list[Any]:
    t = uid("ten")
    return [
        probe.customer_cmd(t),
        probe.customer_cmd(t, "production", "JP", live=True),
        probe.transfer(t, uid("wal"), uid("wal"), "1"),
        probe.payout(t, uid("wal"), uid("ea"), "1"),
        ApproveRoute(
            command_id=uid("cmd"), ctx=probe.ctx(t, "production", actor="ops"), rail="ach", currency="USD"
        ),
        ListDecisions(command_id=uid("cmd"), ctx=probe.ctx(t), target_tenant_id=t),
    ]


async def _outage_then_recovery(
    probe: Probe, proxy: StoreProxy, direct_url: str, url: str, bootstrap: str, fault: str
) -> None:
    """While the store is unreachable nothing is decided, forwarded or answered, and the
    service says it is not ready; once the store is back every command is decided exactly
    once (within seconds), and nothing was dead-lettered for the outage."""
    assert (await probe.submit(_commands(probe)[0])).kind == "forward"
    cmds = _commands(probe)
    ids = {c.command_id for c in cmds}
    getattr(proxy, fault)()
    try:
        futs = await asyncio.gather(*(probe.publish(c) for c in cmds))
        await asyncio.sleep(6)  # longer than every timeout of a store call
        assert not [f for f in futs if f.done()], "a command was decided while the store was down"
        async with httpx.AsyncClient() as client:
            ready = await client.get(url + "/readyz", timeout=10)
        assert ready.status_code == 503
        checks = ready.json()["checks"]
        assert checks["database"].startswith("unavailable"), checks
        assert "transient" in checks.get("consumer compliance-commands", ""), checks
    finally:
        proxy.start()
    started = time.monotonic()
    seen = await asyncio.wait_for(asyncio.gather(*futs), 30)
    print(f"\nstore {fault}: 6 commands decided {time.monotonic() - started:.2f}s after it returned")
    for cmd, s in zip(cmds, seen, strict=True):
        if s.kind == "reply":  # policy commands answer; nothing is a 5xx
            assert s.reply.status < 500, (type(cmd).__name__, s.reply)
    conn = await pg_connect(direct_url)
    try:
        kept = await conn.fetch(
            "SELECT command_id, count(*) AS n FROM compliance.decisions WHERE command_id = ANY($1)"
            " GROUP BY command_id",
            list(ids),
        )
    finally:
        await conn.close()
    counts = {r["command_id"]: r["n"] for r in kept}
    assert set(counts) == {c.command_id for c in cmds if type(c).__name__ in DECIDED}
    assert set(counts.values()) == {1}
    letters = await dead_letters(bootstrap, PREFIX, wait_s=1.5)
    assert [d for d in letters if any(i.encode() in d.payload for i in ids)] == []


DECIDED = {"CreateCustomer", "CreateTransfer", "CreateWallet", "CreateVirtualAccount", "SandboxDeposit"}


async def test_store_down_nothing_decided_until_it_returns_then_each_once(
    stack: Stack, probe: Probe, store: tuple[StoreProxy, str, str]
) -> None:
    proxy, direct, url = store
    await _outage_then_recovery(probe, proxy, direct, url, stack.stores.kafka_bootstrap, "cut")


async def test_store_blackholed_nothing_decided_until_it_returns_then_each_once(
    stack: Stack, probe: Probe, store: tuple[StoreProxy, str, str]
) -> None:
    proxy, direct, url = store
    await _outage_then_recovery(probe, proxy, direct, url, stack.stores.kafka_bootstrap, "blackhole")

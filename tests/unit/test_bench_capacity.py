"""The capacity search's wiring (yardstick 1, tools.bench.capacity): the steps run until
the decision says stop, the quiet-stack wait runs between them, a search that gives up yields
no capacity; a capacity step is one open-loop phase of the overload driver; the monolith gets
the six tenants' shape over its own wallets; the open-loop generator reports what a step needs
(the admitted p99 and its own lag)."""

from __future__ import annotations

import argparse
import asyncio

import pytest

from tools.bench import capacity as bench_capacity
from tools.bench import load
from tools.bench.capacity_search import Step
from tools.bench.driver import drive, phases
from tools.bench.overload.part import SHARES, WALLETS_PER_TENANT, same_shape

pytestmark = pytest.mark.unit


def test_the_search_runs_steps_and_waits_between_them() -> None:
    ran: list[float] = []
    waits: list[int] = []

    def step(rate: float) -> Step:
        ran.append(rate)
        n = int(rate * 10)
        return Step(rate, 10, n, 0, 50.0, 1.0) if rate <= 300 else Step(rate, 10, n, n, 900.0, 1.0)

    found, why = bench_capacity.search("test", step, 100.0, lambda: waits.append(len(ran)))
    assert why is None and 300 * 0.95 <= found <= 300
    assert len(waits) == len(ran) - 1  # before every step but the first
    assert ran[:3] == [100.0, 150.0, 225.0]


def test_a_search_that_gives_up_has_no_capacity() -> None:
    found, why = bench_capacity.search("test", lambda r: Step(r, 10, int(r * 10), 0, 50.0, 20.0), 100.0)
    assert found == 0.0 and why is not None and "driver could not offer" in why


def test_a_capacity_step_is_one_phase() -> None:
    assert phases({"phases": [["step", 120, 10]]}) == [("step", 120.0, 10.0)]
    assert phases({"capacity": 100.0, "factor": 4.0, "overload_s": 30.0, "quiet_s": 8.0}) == [
        ("quiet", 50.0, 8.0),
        ("overload", 400.0, 30.0),
        ("after", 50.0, 8.0),
    ]


def test_the_monolith_gets_the_same_tenants_shape() -> None:
    wallets = [f"w{i}" for i in range(300)]
    shaped = same_shape(wallets)
    assert [t["share"] for t in shaped] == list(SHARES)
    assert all(len(t["wallets"]) == WALLETS_PER_TENANT for t in shaped)
    assert len({w for t in shaped for w in t["wallets"]}) == len(SHARES) * WALLETS_PER_TENANT
    with pytest.raises(ValueError):
        same_shape(wallets[:10])


async def _server(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
            await reader.readexactly(length)
            writer.write(b"HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\n{}")
    except (asyncio.IncompleteReadError, ConnectionError):
        writer.close()


async def test_a_driven_phase_and_a_paced_load_report_what_a_step_needs() -> None:
    server = await asyncio.start_server(_server, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1/transfers"
    try:
        res = await drive(
            {"url": url, "tenants": same_shape([f"w{i}" for i in range(120)]), "phases": [["step", 40, 0.5]]}
        )
        args = argparse.Namespace(
            url=url,
            method="POST",
            header=[],
            body="{}",
            unique=True,
            duration=0.5,
            connections=1,
            rate=40.0,
            grace=5.0,
            wallet_ids=[],
            hot=0.0,
        )
        fig = await load.run(args)
    finally:
        server.close()
    assert len(res["requests"]) == 20 and {r["phase"] for r in res["requests"]} == {"step"}
    assert res["generator"]["schedule_lag_p99_ms"] >= 0
    assert fig["requests"] == 20 and fig["errors"] == 0
    assert fig["admitted_p99_ms"] > 0 and fig["schedule_lag_p99_ms"] >= 0


class ThreadedServer:
    """The scripted server on a loop of its own, for the steps that block on a subprocess."""

    def __init__(self) -> None:
        import threading

        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.server = self.loop.run_until_complete(asyncio.start_server(_server, "127.0.0.1", 0))
        self.port = self.server.sockets[0].getsockname()[1]
        self.ready.set()
        self.loop.run_forever()

    def __enter__(self) -> int:
        self.thread.start()
        self.ready.wait(10)
        return int(self.port)

    def __exit__(self, *exc: object) -> None:
        self.loop.call_soon_threadsafe(self.server.close)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


def test_each_kind_of_step_runs_its_driver_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """The transfers step through the overload driver's process, the customers step through the
    load generator's: a half-second step (too short to be valid) against a server that
    answers 201."""
    monkeypatch.setattr(bench_capacity, "STEP_S", 0.5)
    with ThreadedServer() as port:
        base = f"http://127.0.0.1:{port}"
        tenants = same_shape([f"w{i}" for i in range(120)])
        transfers = bench_capacity.transfers_step(base + "/v1/transfers", tenants)(40.0)
        customers = bench_capacity.customers_step(base + "/v1/customers", [], "{}")(40.0)
    for st in (transfers, customers):
        assert st.offered == 20 and st.not_ok == 0 and st.p99_ms > 0
        assert not st.valid  # shorter than 10 s

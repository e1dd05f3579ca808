"""make bench's CPU per transfer divides by the transfers done: the closed-loop
run's 2xx answers, not every request. A run that answers half its requests 503 (shed at the
door) or 402 spent its CPU on the half it did; dividing by every request would halve the
figure and flatter a stack that refuses."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from tools.bench import wrk
from tools.bench.abab import STORES_OF_THE_SAME_CONTRACT, cpu_ms, monolith_processes
from tools.bench.transfers import cpu_lines

pytestmark = pytest.mark.unit

# what wrk.run returns, half the requests answered non-2xx
RUN = {"requests": 2000.0, "non2xx": 1000.0, "rps": 200.0, "ok_rps": 100.0}


def test_answered_is_the_2xx_requests_of_a_run() -> None:
    assert wrk.answered(RUN) == 1000.0
    assert wrk.answered({**RUN, "non2xx": 0.0}) == 2000.0


def test_cpu_per_transfer_counts_only_2xx_answers() -> None:
    used = {"ledger": 3.0, "gateway": 6.0}  # CPU seconds over the run
    chain = ((1.0, 500.0), (1.05, 3500.0))  # (CPU seconds, entries chained) before, after
    cpu, hashed = cpu_lines(used, RUN, chain)
    assert cpu.endswith(": gateway 6.00 ms, ledger 3.00 ms")  # 6 s over 1,000 transfers done
    assert hashed.startswith("journal hash chain: 50.0 us of ledger CPU per transfer, 3.0 ")


def test_no_transfer_done_prints_no_chain_share() -> None:
    lines = cpu_lines({"ledger": 1.0}, {**RUN, "non2xx": RUN["requests"]}, ((0.0, 0.0), (1.0, 9.0)))
    assert len(lines) == 1


def test_the_monoliths_cpu_counts_its_postgresql() -> None:
    """Yardstick 5 (docs/performance/index.md): the suite's CPU per transfer counts PostgreSQL
    (the postmaster and every process under it); the monolith's counted only its own process.
    Both count it now."""
    stack = {"gateway": 10, "ledger": 11, "kafka": 12, "valkey": 13, "postgres": 14}
    assert monolith_processes(stack, 99) == {"monolith": 99, "postgres": 14}
    assert monolith_processes({"gateway": 10}, 99) == {"monolith": 99}  # PostgreSQL given by URL
    # The same-contract baseline keeps the gateway's records in Valkey too: counted with it.
    same = monolith_processes(stack, 99, STORES_OF_THE_SAME_CONTRACT)
    assert same == {"monolith": 99, "postgres": 14, "valkey": 13}
    used = {"monolith": 1.0, "postgres": 0.5}  # CPU seconds over a turn of 500 transfers
    assert cpu_ms(used, 500) == pytest.approx(3.0)
    assert cpu_ms(used, 0) == pytest.approx(1500.0)  # never divided by zero


def _fake_baseline(url: str, started: list[tuple[str, dict[str, str] | None]]) -> Any:
    """A stand-in for ``tools.bench.measure.baseline_process``: no process started, each start
    (its kind and environment) noted in ``started``, its process id 1 and its address ``url``."""

    @contextlib.contextmanager
    def process(kind: str, dsn: str, env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
        started.append((kind, env))

        class P:
            pid = 1

        yield P(), url

    return process


def test_the_judged_cpu_turns_are_open_loop_each_at_its_own_share(monkeypatch: pytest.MonkeyPatch) -> None:
    """The judged CPU multiple comes from open-loop turns, the monolith at its rate and the
    suite at its own (no closed loop whose refusals the suite pays for), each 2xx-divided."""
    from tools.bench import abab as bench_abab

    turns: list[tuple[str, float]] = []

    def turn(url: str, tenants: list[dict[str, object]], rate: float, counted: dict[str, int]):  # type: ignore[no-untyped-def]
        turns.append((url, rate))
        mono = "monolith" in counted
        return (
            rate,
            {"monolith" if mono else "gateway": rate * 10 * (0.001 if mono else 0.004)},
            int(rate * 10),
            0,
        )

    monkeypatch.setattr(bench_abab, "open_turn", turn)
    monkeypatch.setattr(bench_abab, "baseline_process", _fake_baseline("http://mono", []))
    monkeypatch.setattr(bench_abab, "PAIRS", 2)
    pairs = bench_abab.run_open(
        "http://suite/v1/transfers", [], [], (1000.0, 300.0), {"gateway": 2}, "dsn", lambda: None
    )
    assert turns == [("http://mono/v1/transfers", 1000.0), ("http://suite/v1/transfers", 300.0)] * 2
    assert [round(p.cpu_multiple, 6) for p in pairs] == [4.0, 4.0]  # 4 ms over 1 ms, per 2xx answer


def test_the_same_contract_turns_run_it_with_the_suites_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same-contract baseline's turns start it with the suite's environment (its stores and
    secrets) and count its process, PostgreSQL and Valkey; the suite's services are not counted."""
    from tools.bench import abab as bench_abab

    started: list[tuple[str, dict[str, str] | None]] = []
    counted_in_turns: list[set[str]] = []

    def turn(url: str, tenants: list[dict[str, object]], rate: float, counted: dict[str, int]):  # type: ignore[no-untyped-def]
        counted_in_turns.append(set(counted))
        return rate, dict.fromkeys(counted, 0.01), int(rate * 10), 0

    monkeypatch.setattr(bench_abab, "open_turn", turn)
    monkeypatch.setattr(bench_abab, "baseline_process", _fake_baseline("http://same", started))
    monkeypatch.setattr(bench_abab, "PAIRS", 1)
    stack = {"gateway": 2, "ledger": 3, "valkey": 4, "postgres": 5, "kafka": 6}
    env = {"SLUICE_DATABASE_URL": "postgresql+asyncpg://x/y"}
    bench_abab.run_open(
        "http://suite/v1/transfers",
        [],
        [],
        (100.0, 100.0),
        stack,
        "dsn",
        lambda: None,
        kind="samecontract",
        env=env,
    )
    assert started == [("samecontract", env)]
    assert counted_in_turns == [{"monolith", "postgres", "valkey"}, set(stack)]

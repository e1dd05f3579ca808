"""The deterministic simulation's short budget (``make simulate`` runs the long one).

The real ledger and compliance code on a real PostgreSQL, the broker simulated: records
reordered, duplicated and delivered again, services crashed at random statements. Then the
same harness with one money rule deliberately broken must find it within the same budget,
and a seed must replay exactly.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterator
from decimal import Decimal
from typing import Any

import pytest
import pytest_asyncio

from compliance import allowance
from ledger import service
from ledger.core import accounts, entries
from tests.conftest import Stack
from tests.simulation.sim import Outcome, Simulation, summary

pytestmark = [pytest.mark.integration, pytest.mark.long, pytest.mark.timeout(600)]

SEEDS = int(os.environ.get("SIMULATE_TEST_SEEDS", "20"))
STEPS = 60


@pytest_asyncio.fixture
async def sim(stack: Stack) -> AsyncIterator[Simulation]:
    """A database of its own beside the session stack's (the same embedded server)."""
    async with Simulation(os.environ.get("SIMULATE_DATABASE_URL") or stack.stores.database_url) as s:
        yield s


async def first_violation(sim: Simulation, seeds: int = SEEDS) -> tuple[Outcome | None, list[Outcome]]:
    outcomes = []
    for seed in range(seeds):
        out = await sim.run_seed(seed, STEPS)
        outcomes.append(out)
        if not out.ok:
            return out, outcomes
    return None, outcomes


async def test_short_budget_keeps_every_invariant(sim: Simulation) -> None:
    bad, outcomes = await first_violation(sim)
    print(summary(outcomes))
    assert bad is None, bad.line()
    assert len(outcomes) == SEEDS
    assert sum(o.crashes for o in outcomes) >= SEEDS, "the faults must fire"
    assert sum(o.commands for o in outcomes) >= 10 * SEEDS


# What a run leaves in its database, without the columns a run stamps itself (times, ids the
# services draw): every balance, transfer and deposit, each command's answer status, compliance's
# decisions and its holds on the daily cap.
END_STATE = (
    "SELECT id, balance FROM ledger.accounts ORDER BY id",
    "SELECT id, kind, state, amount FROM ledger.transfers ORDER BY id",
    "SELECT id, amount FROM ledger.deposits ORDER BY id",
    "SELECT command_id, convert_from(result, 'UTF8')::jsonb->>'status' FROM ledger.inbox ORDER BY 1",
    "SELECT command_id, outcome, rule, reason FROM compliance.decisions ORDER BY 1",
    "SELECT transfer_id, amount, released_at IS NULL FROM compliance.holds ORDER BY 1",
)


async def end_state(sim: Simulation) -> list[list[tuple[Any, ...]]]:
    assert sim.db is not None
    return [[tuple(r) for r in await sim.db.fetch(sql)] for sql in END_STATE]


async def test_a_seed_replays_exactly(sim: Simulation) -> None:
    """The same seed twice: the same counts and violations (none, on a healthy run) and the
    same end state, row for row; and another seed, a different one (the state says something)."""
    first, again = [], []
    for seed in (3, 4):
        first.append((await sim.run_seed(seed, STEPS), await end_state(sim)))
    for seed in (3, 4):
        again.append((await sim.run_seed(seed, STEPS), await end_state(sim)))
    for (o1, s1), (o2, s2) in zip(first, again, strict=True):
        assert (o1.crashes, o1.commands, o1.violations) == (o2.crashes, o2.commands, o2.violations)
        assert s1 == s2, f"seed {o1.seed} ended in another state when replayed"
    assert first[0][1] != first[1][1], "seeds 3 and 4 left the same state: nothing is compared"
    assert first[0][1][0] and first[0][1][1], first[0][1]  # balances and transfers to compare


def _no_overdraft_check(move: Any, balances: dict[str, Decimal], deltas: dict[str, Decimal]) -> bool:
    for e in move.entries:
        for account_id, _, amount in e.postings:
            if not accounts.is_external(account_id):
                deltas[account_id] += amount
    return True


def _no_daily_cap(claims: Any, used: Any) -> tuple[dict[str, Decimal], dict[Any, Decimal]]:
    totals = dict(used)
    for c in claims:
        totals[c.key] = totals.get(c.key, Decimal(0)) + c.amount
    return {}, totals


BROKEN: dict[str, tuple[Any, str, Callable[..., Any], str]] = {
    # the ledger's overdraft rule gone: the database's own check then fails the batch
    "overdraft": (entries, "try_movement", _no_overdraft_check, "dead-lettered by ledger"),
    # compliance grants every transfer whatever the day's usage
    "daily_cap": (allowance, "allot", _no_daily_cap, "cap usage of"),
    # a transfer the ledger refused keeps the allowance compliance gave it
    "allowance_release": (
        service,
        "allowance_release",
        lambda cmd, topics, key, err=None: None,
        "cap hold of",
    ),
}


@pytest.fixture(params=sorted(BROKEN))
def broken(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    module, name, replacement, _ = BROKEN[request.param]
    monkeypatch.setattr(module, name, replacement)
    yield request.param


async def test_a_broken_rule_is_found_within_the_short_budget(sim: Simulation, broken: str) -> None:
    bad, outcomes = await first_violation(sim)
    assert bad is not None, f"{broken} broken, yet {summary(outcomes)}"
    expected = BROKEN[broken][3]
    assert any(expected in v for v in bad.violations), bad.violations
    assert f"SIMULATE_SEED={bad.seed} " in bad.line()
    replay = await sim.run_seed(bad.seed, STEPS)
    assert replay.violations == bad.violations

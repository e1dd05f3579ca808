"""Each check of the chaos audit fails on a deliberately wrong fixture, and a clean
fixture passes: the audit line's zeros are measured, not true by construction."""

from __future__ import annotations

import json
from dataclasses import replace
from decimal import Decimal
from typing import Any

import pytest

from tools.chaos import audit as chaos_audit
from tools.chaos.audit import audit
from tools.chaos.clients import Booking

pytestmark = pytest.mark.unit


def B(  # noqa: N802 - reads like the record it builds
    key: str,
    source: str,
    destination: str,
    amount: Decimal,
    status: int | None,
    transfer_id: str | None,
    error: str = "",
) -> Booking:
    return Booking(key, source, destination, amount, 0.0, status, transfer_id, error, decided_after_s=1.0)


def _refusal(reason: str) -> str:
    return json.dumps({"code": "forbidden", "details": {"reason": reason}})


BOOKINGS = [
    B("k1", "w1", "w2", Decimal("5"), 201, "tr_1"),
    B("k2", "w2", "w1", Decimal("2"), 201, "tr_2"),
    B("k3", "w1", "w2", Decimal("900"), 402, None, _refusal("insufficient_funds")),
]
ROWS = [
    {"id": "tr_1", "idempotency_key": "k1", "state": "completed"},
    {"id": "tr_2", "idempotency_key": "k2", "state": "completed"},
]
ENTRIES = [
    {"transfer_id": "tr_1", "kind": "transfer", "n": 1},
    {"transfer_id": "tr_2", "kind": "transfer", "n": 1},
]
BEFORE = {"w1": Decimal("100"), "w2": Decimal("100")}
AFTER = {"w1": Decimal("97"), "w2": Decimal("103")}
EVENTS = {"tr_1": {"evt_1"}, "tr_2": {"evt_2"}}
UNEXPECTED = _refusal("jurisdiction_restricted")


def run(**changes: Any) -> Any:
    args: dict[str, Any] = {
        "bookings": BOOKINGS,
        "rows": ROWS,
        "entries": ENTRIES,
        "before": BEFORE,
        "after": AFTER,
        "created_ids": EVENTS,
        "invariant_rows": 0,
        "dead_letters": 0,
        "slow_after_s": 45.0,
    }
    args.update(changes)
    return audit(**args)


def test_a_clean_run_is_clean_and_counts_the_allowed_refusal_apart() -> None:
    f = run()
    assert f.clean, f.lines()
    assert f.ok == 2 and dict(f.refused) == {"insufficient_funds": 1} and f.refused_unexpected == []
    assert f.lines()[0].startswith("chaos: transfers 3 lost 0 duplicated 0 undecided 0 balance_drift 0")


# what each wrong fixture must trip, and nothing else: a fixture that also tripped another
# check would stay unclean with its own check deleted (as the duplicated-rows and
# refused-but-done fixtures did without webhook events: missing_webhooks alone made them unclean)
FINDINGS = (
    "refused_unexpected",
    "undecided",
    "lost",
    "duplicated_rows",
    "duplicated_effects",
    "duplicated_events",
    "drift",
    "invariant_violations",
    "missing_webhooks",
    "dead_letters",
    "slow",
)


@pytest.mark.parametrize(
    ("changes", "tripped"),
    [
        (
            {"bookings": [*BOOKINGS[:2], replace(BOOKINGS[2], error=UNEXPECTED)]},
            "refused_unexpected",
        ),
        ({"rows": ROWS[:1]}, "lost"),
        (
            {
                "rows": [*ROWS, {"id": "tr_1b", "idempotency_key": "k1", "state": "completed"}],
                "created_ids": {**EVENTS, "tr_1b": {"evt_1b"}},
            },
            "duplicated_rows",
        ),
        (
            {"entries": [{"transfer_id": "tr_1", "kind": "transfer", "n": 2}, ENTRIES[1]]},
            "duplicated_effects",
        ),
        ({"created_ids": {"tr_1": {"evt_1", "evt_9"}, "tr_2": {"evt_2"}}}, "duplicated_events"),
        ({"created_ids": {"tr_1": {"evt_1"}}}, "missing_webhooks"),
        ({"after": {"w1": Decimal("97"), "w2": Decimal("103.01")}}, "drift"),
        ({"invariant_rows": 1}, "invariant_violations"),
        ({"dead_letters": 1}, "dead_letters"),
        ({"bookings": [*BOOKINGS[:2], replace(BOOKINGS[2], status=None)]}, "undecided"),
        ({"bookings": [replace(BOOKINGS[0], decided_after_s=50.0), *BOOKINGS[1:]]}, "slow"),
        (  # refused, yet its row completed: carried out behind its caller's back, counted lost
            {
                "rows": [*ROWS, {"id": "tr_3", "idempotency_key": "k3", "state": "completed"}],
                "created_ids": {**EVENTS, "tr_3": {"evt_3"}},
            },
            "lost",
        ),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_each_check_fails_on_a_wrong_fixture(changes: dict[str, Any], tripped: str) -> None:
    f = run(**changes)
    assert not f.clean, (tripped, f.lines())
    assert [name for name in FINDINGS if getattr(f, name)] == [tripped], f.lines()


@pytest.mark.parametrize("found", [1, -1])
def test_a_reconciliation_that_found_something_or_failed_is_not_clean(found: int) -> None:
    f = run()
    assert f.clean
    f.reconcile_discrepancies = found
    assert not f.clean
    assert f.lines()[-1] == (
        f"chaos: dead_letters 0 reconcile_discrepancies {found} journal_chain_broken 0 faults_missed 0"
        " restarts_not_ready 0"
    )


def test_a_run_whose_load_ended_before_a_fault_is_not_clean() -> None:
    f = run()
    f.faults_missed = 1
    assert not f.clean and "faults_missed 1" in f.lines()[-1]


def test_a_broken_journal_chain_is_not_clean() -> None:
    f = run()
    f.journal_chain_broken = 1
    assert not f.clean and "journal_chain_broken 1" in f.lines()[-1]


def test_a_restarted_service_that_never_became_ready_is_not_clean() -> None:
    f = run()
    f.restarts_not_ready = 1
    assert not f.clean and f.lines()[-1].endswith("restarts_not_ready 1")


@pytest.mark.parametrize(
    ("ready", "exit_code", "waited", "outcome"),
    [
        (True, None, 3.0, True),  # answered /readyz
        (False, None, 3.0, None),  # still starting: ask again later
        (False, 3, 3.0, False),  # exited (the gateway's exit 3 at start)
        (False, None, 121.0, False),  # running but never ready within the bound
        (False, None, 120.0, None),  # at the bound, not past it
    ],
)
def test_a_restart_is_ready_failed_or_pending(
    ready: bool, exit_code: int | None, waited: float, outcome: bool | None
) -> None:
    assert chaos_audit.restart_outcome(ready, exit_code, waited, 120.0) is outcome

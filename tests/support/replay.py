"""What a partner does with its events after an outage (docs/guides/webhooks.md, "Order and
recovery"): read them in ``sequence`` order and apply each transfer's to its state, checking
every step against the transfer state machine. Pure, so tests/unit checks it too."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from typing import Any

# The transfer and payout state machine as partners read it (docs/guides/money.md).
LEGAL = {
    ("pending", "processing"),
    ("processing", "completed"),
    ("pending", "in_review"),
    ("in_review", "processing"),
    ("in_review", "rejected"),
    ("processing", "failed"),
    ("completed", "returned"),
}
FIRST_STATES = {"pending", "in_review", "completed"}  # what a transfer can be created in


def check_sequences(events: Iterable[Mapping[str, Any]]) -> list[int]:
    """The events' numbers, asserted strictly increasing (so no two alike) and ids unique."""
    listed = list(events)
    numbers = [int(e["sequence"]) for e in listed]
    assert all(a < b for a, b in itertools.pairwise(numbers)), "sequence not increasing"
    assert len({e["id"] for e in listed}) == len(listed), "an event listed twice"
    return numbers


def replay(events: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Each transfer's state after applying its events in the order given (oldest first): the
    first must be ``transfer.created`` in a state a transfer can start in, and each update
    must leave the state the transfer is in by a legal step."""
    states: dict[str, str] = {}
    for e in events:
        kind = str(e["type"])
        if not kind.startswith("transfer."):
            continue
        data = e["data"]
        tid, state = str(data["transfer_id"]), str(data["state"])
        if kind == "transfer.created":
            assert tid not in states, f"{tid}: created twice or after an update"
            assert state in FIRST_STATES, f"{tid}: created in {state}"
        else:
            assert tid in states, f"{tid}: updated before it was created"
            step = (states[tid], state)
            assert data.get("previous_state") == states[tid], f"{tid}: {data.get('previous_state')} != {step}"
            assert step in LEGAL, f"{tid}: illegal step {step}"
        states[tid] = state
    return states

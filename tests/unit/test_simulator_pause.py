"""The sandbox simulator's idle pause (``ledger.simulator.Simulator.pause``): it sleeps until
the next scheduled step, never past half a settle (a step scheduled while it sleeps is due a
settle later) and never under its poll."""

from __future__ import annotations

from typing import Any, cast

import pytest

from ledger.config import LedgerConfig
from ledger.simulator import Simulator


def simulator(settle_s: float, poll_s: float = 0.2) -> Simulator:
    nothing = cast("Any", None)  # pause() touches no store
    return Simulator(nothing, nothing, nothing, LedgerConfig(settle_s=settle_s), nothing, poll_s=poll_s)


@pytest.mark.parametrize(
    ("settle_s", "due_in", "pause"),
    [
        (2.0, None, 1.0),  # nothing scheduled: half a settle
        (2.0, 0.6, 0.6),  # wakes when the earliest step is due
        (2.0, 5.0, 1.0),  # never past half a settle: something may be scheduled meanwhile
        (2.0, -3.0, 0.2),  # overdue (another instance holds it): the poll, not a busy loop
        (2.0, 0.05, 0.2),
        (0.1, None, 0.2),  # a settle shorter than the poll: the poll
    ],
)
def test_pause(settle_s: float, due_in: float | None, pause: float) -> None:
    sim = simulator(settle_s)
    sim.due_in = due_in
    assert sim.pause() == pytest.approx(pause)

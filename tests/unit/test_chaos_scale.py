"""The scaling scenario's pause measures (tools.chaos.scale)."""

from __future__ import annotations

from decimal import Decimal

from tools.chaos.clients import Booking
from tools.chaos.scale import longest_pause, pauses_by_change


def booked(*spans: tuple[float, float]) -> list[Booking]:
    """Decided transfers, each (started, decided) in seconds."""
    return [
        Booking(f"k{i}", "a", "b", Decimal(1), start, status=201, decided_after_s=end - start)
        for i, (start, end) in enumerate(spans)
    ]


def test_the_longest_pause_is_the_widest_gap_while_a_transfer_waited() -> None:
    bookings = booked((0, 0.5), (0.5, 1), (1, 2), (1.5, 9), (9, 10))
    bookings.append(Booking("undecided", "a", "b", Decimal(1), 5))  # no decision: not a point
    assert longest_pause(bookings) == (7, 2)  # from the decision at 2 to the one at 9
    assert longest_pause([]) == (0.0, 0.0)


def test_a_gap_with_nothing_in_flight_is_not_a_pause() -> None:
    # Decided at 1, then nothing issued until 8 (the clients held at the fault gate), decided
    # at 8.5: the suite stalled 0.5 s, not 7.5 s.
    bookings = booked((0, 1), (8, 8.5), (8.2, 12))
    assert longest_pause(bookings) == (3.5, 8.5)


def test_each_change_gets_the_longest_pause_that_ends_after_it() -> None:
    bookings = booked((0, 0), (0, 1), (1, 2), (2, 9), (9, 10), (10, 20), (20, 21))
    assert pauses_by_change(bookings, [("ledger 1->3", 1.5), ("gateway +1", 9.5)]) == [
        "ledger 1->3: longest pause 7.0 s",
        "gateway +1: longest pause 10.0 s",
    ]

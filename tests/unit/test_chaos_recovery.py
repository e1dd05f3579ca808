"""The failover's recovery objectives (docs/operations/failover.md) decide the chaos run: an acknowledged
transfer missing from the promoted primary fails it (RPO), so does a suite that answers 201
again only 16 s after the promotion started (RTO, limit 15 s); a clean failover passes."""

from __future__ import annotations

from decimal import Decimal

import pytest

from common.faults import is_transient
from tools.chaos.audit import recovery
from tools.chaos.clients import Booking

pytestmark = pytest.mark.unit

KILLED, PROMOTED, LIMIT = 100.0, 105.0, 15.0


def B(key: str, started: float, status: int | None, transfer_id: str | None) -> Booking:  # noqa: N802
    return Booking(key, "w1", "w2", Decimal("1"), started, status, transfer_id)


BOOKINGS = [
    B("k1", 90.0, 201, "tr_1"),  # acknowledged before the primary was lost
    B("k2", 99.5, 201, "tr_2"),  # in flight at the loss, acknowledged by the new primary
    B("k3", 110.0, 201, "tr_3"),  # issued after the promotion
    B("k4", 95.0, None, None),  # undecided: not the RPO's (the main audit counts it)
]
COMMITTED = ["tr_1", "tr_2", "tr_3"]
ATTEMPTS = [
    (90.0, 90.1, "201"),
    (99.5, 104.0, "503"),  # refused while no node accepted writes
    (104.5, 105.2, "201"),  # sent before the promotion: not a sign of recovery
    (106.0, 108.0, "201"),  # the first 201 to a request sent after the promotion started
    (110.0, 110.2, "201"),
]


def test_a_clean_failover_passes() -> None:
    r = recovery(BOOKINGS, COMMITTED, ATTEMPTS, KILLED, PROMOTED, LIMIT)
    assert (r.rpo, r.rto_s, r.detection_s) == (0, 3.0, 5.0)
    assert r.ok
    assert r.line() == "chaos-failover: rpo 0 detection_s 5.0 rto_s 3.0 rto_limit_s 15 ok"


def test_an_acknowledged_transfer_missing_from_the_new_primary_fails_the_run() -> None:
    r = recovery(BOOKINGS, ["tr_2", "tr_3"], ATTEMPTS, KILLED, PROMOTED, LIMIT)
    assert r.rpo == 1
    assert not r.ok
    assert "rpo 1" in r.line() and r.line().endswith("FAILED")


def test_a_transfer_issued_after_the_promotion_is_not_the_failovers_loss() -> None:
    assert recovery(BOOKINGS, ["tr_1", "tr_2"], ATTEMPTS, KILLED, PROMOTED, LIMIT).rpo == 0


def test_a_late_recovery_fails_the_run() -> None:
    late = [(s, a, o) for s, a, o in ATTEMPTS if a < 108.0] + [(112.0, PROMOTED + 16.0, "201")]
    r = recovery(BOOKINGS, COMMITTED, late, KILLED, PROMOTED, LIMIT)
    assert r.rto_s == 16.0
    assert not r.ok


def test_a_suite_that_never_answers_again_fails_the_run() -> None:
    r = recovery(BOOKINGS, COMMITTED, ATTEMPTS[:3], KILLED, PROMOTED, LIMIT)
    assert r.rto_s is None and not r.ok
    assert "rto_s never" in r.line()


def test_no_writable_host_yet_is_a_transient_fault() -> None:
    """asyncpg's answer when every host of the URL answers but none accepts writes (the
    standbys before a promotion): waited out, never dead-lettered."""
    from asyncpg.exceptions import TargetServerAttributeNotMatched

    assert is_transient(TargetServerAttributeNotMatched("None of the hosts match"))

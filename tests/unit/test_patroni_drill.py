"""The Patroni drill's verdict (tools.chaos.patroni.drill): a lost acknowledged commit or writes
back later than MAX_RTO_S after the promotion fail it; the measures it is built from."""

from __future__ import annotations

import pytest

from tools.chaos.patroni.drill import MAX_RTO_S, FaultResult, failures, first_write_after, lost_commits

pytestmark = pytest.mark.unit


def test_lost_commits_counts_acknowledged_rows_missing_from_the_new_leader() -> None:
    assert lost_commits([1, 2, 3], [1, 2, 3, 4]) == 0  # an unacknowledged commit may survive
    assert lost_commits([1, 2, 3, 4], [1, 2]) == 2
    assert lost_commits([], []) == 0


def test_first_write_after_the_promotion() -> None:
    assert first_write_after(10.0, [9.0, 9.9, 11.5, 12.0]) == pytest.approx(1.5)
    assert first_write_after(10.0, [10.0]) == 0.0
    assert first_write_after(10.0, [9.0]) is None  # nothing written since: not yet recovered


def test_a_clean_drill_passes() -> None:
    results = [FaultResult("lost", 0, 19.8, 1.2), FaultResult("switchover", 0, 2.1, 0.4)]
    assert failures(results) == []


def test_a_lost_commit_fails_whatever_the_timing() -> None:
    assert failures([FaultResult("lost", 1, 19.8, 0.5)]) == ["lost: 1 acknowledged commits lost"]


def test_writes_back_too_late_fail_but_detection_alone_does_not() -> None:
    # detection is Patroni's ttl (the dead leader's key must expire): not the RTO
    assert failures([FaultResult("lost", 0, 30.0, MAX_RTO_S)]) == []
    slow = failures([FaultResult("switchover", 0, 1.0, MAX_RTO_S + 0.1)])
    assert len(slow) == 1 and slow[0].startswith("switchover: writes back")
    assert failures([FaultResult("lost", 0, 20.0, 5.0)], max_rto_s=4.0) != []


def test_the_line_the_runs_grep_for() -> None:
    line = FaultResult("lost", 0, 19.84, 1.26).line()
    assert line == "patroni-drill: lost rpo 0 detection_s 19.8 rto_s 1.3"

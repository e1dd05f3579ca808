"""make bench-history's verdict (tools.bench.history_targets) and the seeder's arithmetic
(tools.bench.history): the history costing more than 10 % of capacity or adding more than 10 %
to CPU per transfer, or a check slower than 30 s per 100,000 journal entries, is a ``MISSED:``
line and exits 1; a figure not measured, a history short of its size or a seeded database the
checks did not find clean is an ``ERROR:`` line and exits 1; at the bounds, every target is met."""

from __future__ import annotations

import pytest

from tools.bench.history import plan_workers, split, weights
from tools.bench.history_targets import Figures, History, errors, exit_code, missed, per_100k, verdict

pytestmark = pytest.mark.unit


def met(**kw: object) -> History:
    """Everything measured, every target met exactly at its bound."""
    h = History(
        asked=1_000_000,
        seeded=1_000_000,
        empty=Figures(capacity=400.0, cpu_ms=5.0),
        full=Figures(capacity=360.0, cpu_ms=5.5),
        entries=2_000_000,
        verify_s=600.0,
        reconcile_s=600.0,
        findings=[],
    )
    for k, v in kw.items():
        setattr(h, k, v)
    return h


def test_at_the_bounds_every_target_is_met() -> None:
    h = met()
    assert missed(h) == [] and errors(h) == []
    assert verdict(h) == ["bench-history: every target met (1000000 transfers)"]
    assert exit_code(h) == 0


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"full": Figures(capacity=359.0, cpu_ms=5.0)}, "transfer capacity with the history >= 0.90"),
        ({"full": Figures(capacity=400.0, cpu_ms=5.51)}, "CPU per transfer with the history <= 1.10x"),
        ({"verify_s": 601.0}, "verify_journal <= 30 s per 100,000 journal entries (measured 30.1 s"),
        ({"reconcile_s": 700.0}, "reconcile <= 30 s per 100,000 journal entries (measured 35.0 s"),
    ],
)
def test_each_missed_target_is_named_with_its_figure(change: dict[str, object], named: str) -> None:
    h = met(**change)
    [line] = missed(h)
    assert line.startswith(named), line
    assert verdict(h) == [f"MISSED: {line}"]
    assert exit_code(h) == 1


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"seeded": 999_999}, "history seeded 999999 of 1000000 transfers"),
        ({"seeded": None}, "history seeded 0 of 1000000 transfers"),
        (
            {"empty": Figures(capacity=None, cpu_ms=5.0)},
            "transfer capacity on the empty database not measured",
        ),
        ({"full": Figures(capacity=360.0, cpu_ms=None)}, "CPU per transfer with the history not measured"),
        ({"verify_s": None}, "verify_journal's time not measured"),
        ({"entries": 0}, "the journal entries verify_journal walked not measured"),
        ({"findings": None}, "the two checks' findings not measured"),
        (
            {"findings": ["verify_journal: entry_mismatch: x"]},
            "the seeded database is not clean: verify_journal",
        ),
        ({"errors": ["the run stopped: RuntimeError()"]}, "the run stopped: RuntimeError()"),
    ],
)
def test_what_was_not_measured_or_not_clean_is_an_error(change: dict[str, object], named: str) -> None:
    h = met(**change)
    assert any(e.startswith(named) for e in errors(h)), errors(h)
    assert any(line == f"ERROR: {e}" for e in errors(h) for line in verdict(h))
    assert exit_code(h) == 1


def test_a_missing_side_is_not_judged_as_a_ratio() -> None:
    h = met(empty=Figures(capacity=0.0, cpu_ms=None))
    assert missed(h) == []  # nothing to divide by: an ERROR: line instead
    assert exit_code(h) == 1


def test_seconds_per_100k_entries() -> None:
    assert per_100k(30.0, 100_000) == 30.0
    assert per_100k(60.0, 2_000_000) == 3.0
    assert per_100k(None, 10) is None and per_100k(1.0, 0) is None


def test_split_spreads_the_whole_total_by_weight() -> None:
    parts = split(1_000_000, weights(20))
    assert sum(parts) == 1_000_000
    assert parts == sorted(parts, reverse=True) and parts[0] > 5 * parts[-1]  # a few large, a tail
    assert split(7, [1, 1, 1]) in ([3, 2, 2], [2, 3, 2], [2, 2, 3])
    assert split(0, [1, 2]) == [0, 0]


def test_workers_get_the_largest_quotas_first_to_the_least_loaded() -> None:
    quotas = [("a", 50), ("b", 30), ("c", 20), ("d", 10)]
    groups = plan_workers(quotas, 2)
    assert groups == [[("a", 50), ("d", 10)], [("b", 30), ("c", 20)]]
    assert plan_workers(quotas, 1) == [quotas]
    assert plan_workers([("a", 5)], 4) == [[("a", 5)]]  # no empty worker

"""make bench's CPU sweep (tools.bench.sweep): what each point's line says, a rate above a
system's capacity printed as such and never a CPU figure, and the judged 350/s multiple, with
an ERROR when the same-contract baseline cannot reach 350/s (never a pass, never a figure made
up from a point above its capacity)."""

from __future__ import annotations

import pytest

from tools.bench.sweep import Point, fixed_multiple, line, plan, summary
from tools.bench.targets import Results, errors

pytestmark = pytest.mark.unit


def measured(system: str, rate: float, capacity: float, **kw: object) -> Point:
    """A window at ``rate`` that went well: every request 2xx, p99 40 ms, 5.1 s of CPU."""
    fig: dict[str, object] = {
        "ran": True,
        "offered": int(rate * 20),
        "ok": int(rate * 20),
        "p99_ms": 40.0,
        "cpu_s": rate * 20 * 0.0051,
        "load": 1.3,
    }
    fig.update(kw)
    return Point(system, rate, capacity, **fig)  # type: ignore[arg-type]


def test_a_points_line_says_its_cpu_p99_not_2xx_and_load() -> None:
    p = measured("suite", 350, 420)
    assert line(p) == "sweep: suite 350/s cpu_ms 5.10 p99 40 ms not-2xx 0 of 7000 (refused 0) load 1.3"


def test_a_point_at_capacity_names_the_capacity() -> None:
    p = measured("samecontract", 31, 31, at_capacity=True)
    assert line(p).startswith("sweep: samecontract at its capacity 31/s cpu_ms 5.10 p99 40 ms")


def test_a_rate_above_the_capacity_is_printed_as_such_and_is_no_cpu_figure() -> None:
    p = Point("samecontract", 350, 31)
    assert p.above and p.cpu_ms is None
    assert line(p) == "sweep: samecontract 350/s above its capacity 31/s: not run, no CPU figure"
    # Even measured, CPU over the 2xx answers above the capacity is no figure.
    assert measured("samecontract", 350, 31).cpu_ms is None
    assert Point("suite", 100, 0).above  # no capacity found: nothing is within it


def test_a_window_over_the_capacitys_criteria_shows_its_figures_and_no_cpu() -> None:
    slow = measured("suite", 350, 420, p99_ms=900.0)
    refused = measured("suite", 350, 420, ok=6900, refused=100)
    for p in (slow, refused):
        assert p.cpu_ms is None
        assert "cpu_ms -" in line(p) and "over its capacity in this window" in line(p)
    assert "not-2xx 100 of 7000 (refused 100)" in line(refused)
    assert measured("suite", 350, 420, ok=6930, refused=70).cpu_ms is not None  # 1 % is within


def test_the_plan_runs_each_rate_baseline_first_then_each_capacity() -> None:
    points = plan((350, 100), {"suite": 420.0, "samecontract": 31.0})
    assert [(p.system, p.rate, p.at_capacity, p.above) for p in points] == [
        ("samecontract", 100, False, True),
        ("suite", 100, False, False),
        ("samecontract", 350, False, True),
        ("suite", 350, False, False),
        ("samecontract", 31.0, True, False),
        ("suite", 420.0, True, False),
    ]
    # A system whose capacity search gave up has no capacity point.
    assert [p.system for p in plan((100,), {"suite": 420.0}) if p.at_capacity] == ["suite"]


def test_the_fixed_multiple_is_suite_over_baseline_at_350() -> None:
    points = [
        measured("samecontract", 350, 400, cpu_s=7000 * 0.0025),
        measured("suite", 350, 420),
        measured("samecontract", 100, 400, cpu_s=1.0),  # another rate: not used
    ]
    multiple, why = fixed_multiple(points)
    assert why is None and multiple == pytest.approx(5.1 / 2.5)


def test_the_baseline_unable_to_reach_350_is_an_error_with_its_capacity() -> None:
    points = [Point("samecontract", 350, 31), measured("suite", 350, 420)]
    multiple, why = fixed_multiple(points)
    assert multiple is None
    assert why == (
        "CPU per transfer over the same-contract baseline at 350/s: the same-contract baseline "
        "cannot reach 350/s on this machine (its capacity 31/s)"
    )
    r = Results(frozenset({"transfers"}), cpu_multiple_fixed=multiple, errors=[why])
    assert why in errors(r)  # an ERROR: line of the verdict, and exit 1
    assert "no figure at 350/s" in summary(points, multiple, why)


def test_no_350_point_or_a_failed_window_is_an_error_not_a_figure() -> None:
    _, why = fixed_multiple([measured("suite", 100, 420), measured("samecontract", 100, 400)])
    assert why is not None and "no 350/s point" in why
    failed = [measured("samecontract", 350, 400, p99_ms=800.0), measured("suite", 350, 420)]
    multiple, why = fixed_multiple(failed)
    assert multiple is None and why is not None
    assert "the same-contract baseline was over its capacity in the 350/s window (p99 800 ms" in why
    _, why = fixed_multiple([Point("samecontract", 350, 0), measured("suite", 350, 420)])
    assert why is not None and "the same-contract baseline's capacity was not measured" in why

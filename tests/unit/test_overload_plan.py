"""No renice in any figure a target is judged on (yardstick 2, tools.bench.overload.plan): the
judged overload runs, the hog run included, have the gateway and the hog at the stack's
priority, and the load driver (the instrument, not the system) at DRIVER_NICE in every run;
a reniced variant comes after them, labelled, and is judged on nothing. On
today's harness the whole part ran the gateway at nice -5 and its driver at -10, and the hog
at 0: below the gateway it was meant to compete with."""

from __future__ import annotations

import pytest

from tools.bench.overload import part as bench_overload
from tools.bench.overload.plan import DRIVER_NICE, Run, parse_renice, plan

pytestmark = pytest.mark.unit


def test_judged_runs_are_at_the_stacks_priority() -> None:
    runs = plan([2.0, 4.0], hog=0.5)
    assert [r.label for r in runs] == ["bench-overload", "bench-overload-4x", "bench-overload-hog"]
    assert all(r.judged and r.gateway_nice == 0 and r.driver_nice == DRIVER_NICE for r in runs)
    assert runs[-1] == Run("bench-overload-hog", 2.0, hog=0.5)


def test_a_reniced_variant_is_printed_second_labelled_and_not_judged() -> None:
    runs = plan([2.0, 4.0], renice=parse_renice("-5,-10"))
    judged = [r for r in runs if r.judged]
    reniced = [r for r in runs if not r.judged]
    assert runs == judged + reniced  # every judged run first
    assert [(r.factor, r.gateway_nice, r.driver_nice) for r in reniced] == [(2.0, -5, -10), (4.0, -5, -10)]
    assert all("reniced" in r.label and "not judged" in r.label for r in reniced)
    assert all(r.gateway_nice == 0 and r.driver_nice == DRIVER_NICE for r in judged)


def test_the_driver_keeps_its_priority_in_every_load_it_drives(monkeypatch: pytest.MonkeyPatch) -> None:
    """The capacity steps and half loads (overload_driver.drive_once) and the customers'
    generator (measure.run_load) start the driver at DRIVER_NICE, never at the stack's."""
    import json
    import subprocess
    from pathlib import Path
    from typing import Any

    from tools.bench import driver as overload_driver
    from tools.bench import measure

    asked: list[int] = []

    def run_driver(pfile: Path, ofile: Path, seconds: float, nice: int = 0) -> None:
        asked.append(nice)
        ofile.write_text(json.dumps({"requests": []}))

    monkeypatch.setattr(overload_driver, "run_driver", run_driver)
    overload_driver.drive_once({"phases": []}, 1.0)
    assert DRIVER_NICE < 0 and asked == [DRIVER_NICE]

    started: list[Any] = []

    def run(cmd: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
        started.append(kw.get("preexec_fn"))
        return subprocess.CompletedProcess(cmd, 0, stdout='{"requests": 0}\n', stderr="")

    monkeypatch.setattr(measure.subprocess, "run", run)
    reniced: list[int] = []
    monkeypatch.setattr(measure.os, "nice", reniced.append)
    measure.run_load("http://x/", "--rate", "10", headers=[])
    assert len(started) == 1 and started[0] is not None
    started[0]()  # what the child runs before the generator starts
    assert reniced == [DRIVER_NICE]


def test_no_renice_unless_asked() -> None:
    assert parse_renice("") is None and parse_renice(" ") is None
    assert all(r.judged for r in plan([2.0]))
    assert bench_overload.RENICE is None  # the default environment asks for none

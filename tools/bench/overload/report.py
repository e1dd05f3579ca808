"""What ``tools.bench.overload.part`` prints, from the driver's records alone:
pure, so the honesty rules are unit-tested (tests/unit/test_overload_report.py).

Every request the schedule offered is a record, whatever became of it: ``status`` is the HTTP
status (a 5xx with the ``reason`` its body named: only ``overloaded`` is shed, any other 5xx is
a failure of admitted work, in the admitted p99 at its time and never goodput; see
tools.bench.answers), ``0`` for no answer (``cause`` names it: client timeout, connection refused, reset,
...), ``-1`` for a request still running when the driver stopped waiting. ``s`` is its latency
from its intended send time (the schedule's, not the moment a connection was free).

- A second of the recovery phase is recovered when its p99 is within twice the quiet phase's
  p99, with every answer that is not a 2xx counted as infinitely slow (a 503 is not
  recovered), and so is every later second: ``recovered_s`` is the first such second.
- A key that never got a 2xx, even after its retries, is ``undecided`` (and ``done`` says how
  many of those the database holds anyway); a 2xx whose transfer has no row is ``lost``.
- The quiet tenant's refusals, requests without an answer (by cause), requests still running
  and the generator's own lag are all in the output; a missed target is named after
  ``MISSED:`` and makes ``make bench`` exit non-zero.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from tools.bench.answers import Outcome, label, outcome
from tools.bench.answers import admitted as is_admitted
from tools.bench.overload.plan import FAIR, QUIET

QUIET_TENANT = QUIET  # 2 % of the load
FAIR_TENANT = FAIR  # a sixth of the capacity: its fair share
FAIR_REFUSED_MAX = 0.01


@dataclass(frozen=True, slots=True)
class Phases:
    overload_start: float  # perf_counter of the first overload request's intended send
    overload_s: float
    after_s: float
    capacity: float  # requests/s the transfers part measured
    factor: float  # offered load during overload, as a multiple of capacity


@dataclass(frozen=True, slots=True)
class Audit:
    lost: int = 0  # 2xx (first answer or a retry) with no transfer row
    duplicated: int = 0
    undecided: int = 0  # never a 2xx, even after the retries
    undecided_done: int = 0  # of those, how many the database holds anyway


@dataclass(slots=True)
class Summary:
    offered: float
    admitted: float  # requests/s the door let in (everything not shed), whatever became of them
    shed: float  # 503 overloaded per second: the only refusals for overload
    admitted_p99: float  # over every admitted request: a failure at its time, no answer at its wait
    shed_p99: float
    quiet_p99: float
    quiet_refused: int
    goodput: float  # 2xx answers per second over the capacity
    recovered_s: float  # inf: never recovered within the phase
    no_answer: Counter[str]
    running: int
    audit: Audit
    missed: list[str] = field(default_factory=list)
    failed: Counter[str] = field(default_factory=Counter)  # admitted work's 5xx, by status and reason
    done: float = 0.0  # 2xx answers per second
    limit_down_s: float | None = None  # the hog run: seconds until the door's limit fell a quarter
    fair_sent: int = 0  # the tenant at its fair share: requests in the overload phase
    fair_refused: int = 0  # ... of which without a 2xx


def pct(xs: list[float], p: float) -> float:
    """The ``p`` quantile in ms (``inf`` if any counted sample is)."""
    xs = sorted(xs)
    return 1000 * xs[min(len(xs) - 1, int(len(xs) * p))] if xs else 0.0


def kind(r: dict[str, Any]) -> Outcome:
    """What became of a request (tools.bench.answers): only a 503 ``overloaded`` is shed."""
    return outcome(int(r["status"]), r.get("reason"))


def ok(r: dict[str, Any]) -> bool:
    return 200 <= int(r["status"]) < 300


def recovered_after(reqs: list[dict[str, Any]], end: float, seconds: float, quiet_p99_ms: float) -> float:
    """The first second after ``end`` from which every second's p99 (non-2xx: infinite) stays
    within twice the quiet phase's; ``inf`` if none."""
    limit = 2 * max(quiet_p99_ms, 1.0)
    good = []
    for second in range(int(seconds)):
        window = [r["s"] if ok(r) else math.inf for r in reqs if end + second <= r["at"] < end + second + 1]
        good.append(bool(window) and pct(window, 0.99) <= limit)
    for second in range(len(good)):
        if all(good[second:]):
            return float(second)
    return math.inf


def seconds_line(reqs: list[dict[str, Any]], end: float, seconds: float) -> str:
    """Each second of the recovery phase: its p99 (non-2xx: inf) and its non-2xx count."""
    parts = []
    for second in range(int(seconds)):
        window = [r for r in reqs if end + second <= r["at"] < end + second + 1]
        p99 = pct([r["s"] if ok(r) else math.inf for r in window], 0.99)
        bad = sum(1 for r in window if not ok(r))
        parts.append(f"{second}s p99 {p99:.0f} ms" + (f" ({bad} not 2xx)" if bad else ""))
    return "; ".join(parts)


def summarize(reqs: list[dict[str, Any]], phases: Phases, audit: Audit) -> Summary:
    secs = phases.overload_s
    over = [r for r in reqs if r["phase"] == "overload"]
    admitted = [r for r in over if is_admitted(kind(r))]
    done = [r for r in over if ok(r)]
    shed = [r for r in over if kind(r) is Outcome.SHED]
    quiet_phase = [r["s"] for r in reqs if r["phase"] == "quiet" and ok(r)]
    quiet_tenant = [r for r in over if r["tenant"] == QUIET_TENANT]
    end = phases.overload_start + secs
    after = [r for r in reqs if r["phase"] == "after"]
    return Summary(
        offered=len(over) / secs,
        admitted=len(admitted) / secs,
        shed=len(shed) / secs,
        admitted_p99=pct([r["s"] for r in admitted], 0.99),
        shed_p99=pct([r["s"] for r in shed], 0.99),
        quiet_p99=pct([r["s"] for r in quiet_tenant if ok(r)], 0.99),
        quiet_refused=sum(1 for r in quiet_tenant if not ok(r)),
        goodput=len(done) / secs / max(phases.capacity, 1.0),
        recovered_s=recovered_after(after, end, phases.after_s, pct(quiet_phase, 0.99)),
        no_answer=Counter(str(r.get("cause") or "unknown") for r in reqs if r["status"] == 0),
        running=sum(1 for r in reqs if r["status"] == -1),
        audit=audit,
        failed=Counter(label(int(r["status"]), r.get("reason")) for r in reqs if kind(r) is Outcome.FAILED),
        done=len(done) / secs,
        fair_sent=sum(1 for r in over if r["tenant"] == FAIR_TENANT),
        fair_refused=sum(1 for r in over if r["tenant"] == FAIR_TENANT and not ok(r)),
    )


HOG_LIMIT_DROP = 0.25  # the hog run: the door's limit comes down by at least this share...
HOG_LIMIT_WITHIN_S = 5.0  # ... within this many seconds of the hog starting


def limit_down_s(samples: list[tuple[float, float]], hog_start: float, drop: float = HOG_LIMIT_DROP) -> float:
    """Seconds from ``hog_start`` until the door's command limit (``samples``: (time, limit))
    was at most ``1 - drop`` of what it was when the hog started; ``inf`` if it never was."""
    before = [limit for t, limit in samples if t <= hog_start]
    if not before:
        return math.inf
    bound = (1 - drop) * before[-1]
    return next((t - hog_start for t, limit in samples if t > hog_start and limit <= bound), math.inf)


def missed(s: Summary, factor: float, hog: bool = False) -> list[str]:
    """The targets this run missed (docs/performance/index.md, yardstick 9), at 2x and 4x alike:
    admitted p99, shed p99, goodput, the quiet tenant, nothing lost, duplicated, undecided or
    unanswered (no answer and still running are failures at every load); at 2x also the quiet
    tenant's latency and recovery. Beside the hog (its capacity is not the one measured):
    admitted p99 <= 1 s, the door's limit down by a quarter within 5 s of the hog's start, and
    nothing lost, duplicated, undecided or unanswered."""
    integrity = [
        ("lost 0", s.audit.lost == 0),
        ("duplicated 0", s.audit.duplicated == 0),
        ("undecided 0", s.audit.undecided == 0),
        ("no answer 0", not s.no_answer),
        ("still running 0", s.running == 0),
    ]
    if hog:
        down = s.limit_down_s if s.limit_down_s is not None else math.inf
        checks = [
            ("admitted p99 <= 1000 ms", s.admitted_p99 <= 1000),
            (
                f"limit down {HOG_LIMIT_DROP:.0%} within {HOG_LIMIT_WITHIN_S:.0f} s of the hog",
                down <= HOG_LIMIT_WITHIN_S,
            ),
            *integrity,
        ]
        return [name for name, met in checks if not met]
    checks = [
        ("admitted p99 <= 500 ms", s.admitted_p99 <= 500),
        ("shed p99 <= 20 ms", s.shed_p99 <= 20),
        ("goodput >= 0.9", s.goodput >= 0.9),
        ("quiet-tenant refused 0", s.quiet_refused == 0),
        ("fair-share tenant refused <= 1%", s.fair_refused <= FAIR_REFUSED_MAX * s.fair_sent),
        *integrity,
    ]
    if factor <= 2:
        checks += [
            ("quiet-tenant p99 <= 1000 ms", s.quiet_p99 <= 1000),
            ("recovered_s <= 5", s.recovered_s <= 5),
        ]
    return [name for name, met in checks if not met]


def line(s: Summary, label: str = "bench-overload") -> str:
    recovered = "never" if math.isinf(s.recovered_s) else f"{s.recovered_s:.0f}"
    causes = ", ".join(f"{cause} {n}" for cause, n in sorted(s.no_answer.items()))
    failed = ", ".join(f"{why} {n}" for why, n in sorted(s.failed.items()))
    a = s.audit
    text = (
        f"{label}: offered {s.offered:.0f}/s admitted {s.admitted:.0f}/s (2xx {s.done:.0f}/s) "
        f"shed {s.shed:.0f}/s failed {sum(s.failed.values())}{f' ({failed})' if failed else ''} "
        f"admitted p99 {s.admitted_p99:.0f} ms shed p99 {s.shed_p99:.0f} ms "
        f"quiet-tenant p99 {s.quiet_p99:.0f} ms quiet-tenant refused {s.quiet_refused} "
        f"fair-share tenant refused {s.fair_refused}/{s.fair_sent} "
        f"goodput {s.goodput:.2f} recovered_s {recovered} "
        f"no-answer {sum(s.no_answer.values())}{f' ({causes})' if causes else ''} "
        f"still-running {s.running} lost {a.lost} undecided {a.undecided} (done {a.undecided_done}) "
        f"duplicated {a.duplicated}"
    )
    if s.limit_down_s is not None:
        down = "never" if math.isinf(s.limit_down_s) else f"{s.limit_down_s:.1f} s"
        text += f" limit down a quarter after the hog {down}"
    return text + (f"; MISSED: {', '.join(s.missed)}" if s.missed else "; targets met")


def generator_line(gen: dict[str, Any]) -> str:
    """The load generator's own lag: if it is late, the suite is not what was measured."""
    return (
        f"overload generator: {gen['connections']} connections opened, "
        f"{gen['waited_for_connection']} requests waited for one; schedule lag p99 "
        f"{gen['schedule_lag_p99_ms']:.1f} ms max {gen['schedule_lag_max_ms']:.1f} ms; send lag p99 "
        f"{gen['send_lag_p99_ms']:.1f} ms max {gen['send_lag_max_ms']:.1f} ms"
    )

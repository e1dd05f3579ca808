"""``make bench``'s verdict (docs/performance/index.md, yardstick 9): pure, unit-tested.

The parts fill a :class:`Results` with what they measured; :func:`verdict` names every missed
target on a ``MISSED:`` line and every part asked for but not measured on an ``ERROR:`` line,
and the run exits 1 if there is either (:func:`exit_code`). A part that was asked for and left
its figure empty (no capacity, a pipeline that never settled) is an error, never a pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

BROKERS = ("kafka", "tansu")  # how tools.stack.stores names a broker process

# The targets of docs/performance/index.md, yardstick 9.
RATIO_MIN = 0.5  # transfers and customers: capacity over the monolith's capacity
CPU_MULTIPLE_MAX = 4.0  # CPU per transfer over the monolith's, both with their PostgreSQL
SEQUENTIAL_P50_MS, SEQUENTIAL_P99_MS = 12.0, 25.0
HALF_LOAD_P99_MS = 100.0
IDLE_STACK_MAX, IDLE_BROKER_MAX = 0.05, 0.035  # share of one core


@dataclass
class Results:
    parts: frozenset[str]  # what was asked for: customers, transfers, overload, sizing, idle
    idle: dict[str, float] | None = None  # each process's share of one core, idle
    customers_ratio: float | None = None
    transfers_ratio: float | None = None
    capacities: dict[str, float] = field(default_factory=dict)  # "suite transfers" -> per second
    cpu_multiple: float | None = None  # the suite's CPU per transfer over the monolith's
    sequential: dict[str, float] | None = None  # p50_ms, p99_ms
    half_load: dict[str, dict[str, float]] = field(default_factory=dict)  # part -> open-loop figures
    overload: dict[str, list[str]] = field(default_factory=dict)  # run label -> its missed targets
    errors: list[str] = field(default_factory=list)  # why a part asked for measured nothing
    sizing: dict[str, Any] | None = None  # the sizing part's costs (tools.bench.sizing): no target


def _missed_idle(idle: dict[str, float]) -> list[str]:
    out = []
    total = sum(idle.values())
    if total > IDLE_STACK_MAX:
        out.append(f"idle stack <= {IDLE_STACK_MAX:.0%} of one core (measured {total:.1%})")
    broker = sum(v for k, v in idle.items() if k.split("-")[0] in BROKERS)
    if broker > IDLE_BROKER_MAX:
        out.append(f"idle broker <= {IDLE_BROKER_MAX:.1%} of one core (measured {broker:.1%})")
    return out


def _missed_half_load(part: str, fig: dict[str, float]) -> list[str]:
    out = []
    if fig["p99_ms"] > HALF_LOAD_P99_MS:
        out.append(f"{part} half load p99 <= {HALF_LOAD_P99_MS:.0f} ms (measured {fig['p99_ms']:.0f} ms)")
    if fig.get("refused", 0):
        out.append(f"{part} half load refused 0 (measured {fig['refused']:.0f})")
    unanswered = sum(fig.get(k, 0) for k in ("failed", "no_answer", "unfinished"))
    if unanswered:
        out.append(f"{part} half load failed 0 (measured {unanswered:.0f}: 5xx, no answer, still running)")
    return out


def missed(r: Results) -> list[str]:
    """Every target a measured figure misses, with the figure."""
    out: list[str] = []
    if r.idle is not None:
        out += _missed_idle(r.idle)
    if r.customers_ratio is not None and r.customers_ratio < RATIO_MIN:
        out.append(f"customers ratio >= {RATIO_MIN} (measured {r.customers_ratio:.2f})")
    if r.transfers_ratio is not None and r.transfers_ratio < RATIO_MIN:
        out.append(f"transfers ratio >= {RATIO_MIN} (measured {r.transfers_ratio:.2f})")
    if r.cpu_multiple is not None and r.cpu_multiple > CPU_MULTIPLE_MAX:
        out.append(
            f"CPU per transfer <= {CPU_MULTIPLE_MAX:.0f}x the monolith's (measured {r.cpu_multiple:.1f}x)"
        )
    if r.sequential is not None:
        for q, bound in (("p50", SEQUENTIAL_P50_MS), ("p99", SEQUENTIAL_P99_MS)):
            value = r.sequential[f"{q}_ms"]
            if value > bound:
                out.append(f"sequential {q} <= {bound:.0f} ms (measured {value:.1f} ms)")
    for part, fig in r.half_load.items():
        out += _missed_half_load(part, fig)
    for run, names in r.overload.items():
        out += [f"{run} {name}" for name in names]
    return out


def errors(r: Results) -> list[str]:
    """Parts asked for whose figures are missing: each is an error, not a pass."""
    out = list(r.errors)
    wanted: dict[str, list[tuple[str, object]]] = {
        "idle": [("idle stack", r.idle)],
        "customers": [
            ("customers ratio", r.customers_ratio),
            ("customers half load", r.half_load.get("customers")),
        ],
        "transfers": [
            ("transfers ratio", r.transfers_ratio),
            ("CPU per transfer", r.cpu_multiple),
            ("sequential", r.sequential),
            ("transfers half load", r.half_load.get("transfers")),
        ],
        "overload": [("overload", r.overload or None)],
        "sizing": [("sizing inputs", r.sizing)],
    }
    for part in sorted(r.parts):
        if part not in wanted:
            out.append(f"unknown part {part!r} (BENCH_PARTS: customers, transfers, overload, sizing)")
            continue
        out += [f"{name} not measured" for name, value in wanted[part] if value is None]
    return out


def verdict(r: Results) -> list[str]:
    """The last lines of make bench: one ``MISSED:`` per missed target, one ``ERROR:`` per part
    not measured, or one line saying every target was met."""
    lines = [f"MISSED: {m}" for m in missed(r)] + [f"ERROR: {e}" for e in errors(r)]
    return lines or [f"bench: every target met ({', '.join(sorted(r.parts))})"]


def exit_code(r: Results) -> int:
    return 1 if missed(r) or errors(r) else 0

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

# The targets of docs/performance/index.md, yardstick 9, judged against the same-contract
# baseline (tools.bench.samecontract: the suite's code in one process; "Two baselines").
TRANSFERS_RATIO_MIN = 0.7  # the suite's transfer capacity over the same-contract baseline's
CUSTOMERS_RATIO_MIN = 0.6  # the same for customers
CPU_MULTIPLE_MAX = 1.5  # CPU per transfer over the baseline's, each at its own capacity
CPU_MULTIPLE_FIXED_MAX = 2.0  # the same, both at FIXED_RATE
FIXED_RATE = 350  # transfers per second
SEQUENTIAL_P50_MS, SEQUENTIAL_P99_MS = 10.0, 25.0
HALF_LOAD_P99_MS = 100.0
IDLE_STACK_MAX, IDLE_BROKER_MAX = 0.05, 0.035  # share of one core
# What one transfer with a webhook endpoint costs (the sizing part's counts, the idle stack's
# background subtracted): counts do not move with the machine, so they are judged as measured.
COUNTS_MAX = {
    "wal_bytes": 12_000.0,
    "row_writes": 20.0,
    "kafka_bytes": 2_500.0,
    "offset_commit_records": 0.2,
}
COUNTS_CPU_RATE, COUNTS_CPU_MS_MAX = 100.0, 6.0  # every process's CPU per transfer at 100/s


@dataclass
class Results:
    parts: frozenset[str]  # what was asked for: customers, transfers, overload, sizing, idle
    idle: dict[str, float] | None = None  # each process's share of one core, idle
    # Judged: over the same-contract baseline (tools.bench.samecontract).
    customers_ratio: float | None = None
    transfers_ratio: float | None = None
    capacities: dict[str, float] = field(default_factory=dict)  # "suite transfers" -> per second
    cpu_multiple: float | None = None  # the suite's CPU per transfer over the baseline's, each at capacity
    cpu_multiple_fixed: float | None = None  # the same, both at FIXED_RATE (tools.bench.sweep)
    # Printed beside, not judged: over the minimal monolith (tools.bench.baselines, the floor).
    minimal: dict[str, float] = field(
        default_factory=dict
    )  # "transfers ratio", "customers ratio", "CPU multiple"
    sequential: dict[str, float] | None = None  # p50_ms, p99_ms
    half_load: dict[str, dict[str, float]] = field(default_factory=dict)  # part -> open-loop figures
    overload: dict[str, list[str]] = field(default_factory=dict)  # run label -> its missed targets
    errors: list[str] = field(default_factory=list)  # why a part asked for measured nothing
    sizing: dict[str, Any] | None = None  # the sizing part's costs (tools.bench.sizing)
    counts: dict[str, float] | None = None  # per transfer (tools.bench.sizing.counts) and "rate"


def _missed_idle(idle: dict[str, float]) -> list[str]:
    out = []
    total = sum(idle.values())
    if total > IDLE_STACK_MAX:
        out.append(f"idle stack <= {IDLE_STACK_MAX:.0%} of one core (measured {total:.1%})")
    broker = sum(v for k, v in idle.items() if k.split("-")[0] in BROKERS)
    if broker > IDLE_BROKER_MAX:
        out.append(f"idle broker <= {IDLE_BROKER_MAX:.1%} of one core (measured {broker:.1%})")
    return out


def _missed_counts(c: dict[str, float]) -> list[str]:
    def shown(name: str, v: float) -> str:
        return f"{v:.0f}" if name.endswith("bytes") else f"{v:.2f}"

    out = [
        f"per transfer {name} <= {most:g} (measured {shown(name, c[name])})"
        for name, most in COUNTS_MAX.items()
        if c.get(name, 0.0) > most
    ]
    if c.get("rate") == COUNTS_CPU_RATE and c["cpu_ms"] > COUNTS_CPU_MS_MAX:
        out.append(
            f"per transfer CPU at {COUNTS_CPU_RATE:.0f}/s <= {COUNTS_CPU_MS_MAX:g} ms, every process"
            f" (measured {c['cpu_ms']:.1f} ms)"
        )
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


def _missed_ratios(r: Results) -> list[str]:
    """The ratios over the same-contract baseline."""
    out = []
    base = "the same-contract baseline's"
    for name, value, least in (
        ("customers", r.customers_ratio, CUSTOMERS_RATIO_MIN),
        ("transfers", r.transfers_ratio, TRANSFERS_RATIO_MIN),
    ):
        if value is not None and value < least:
            out.append(f"{name} capacity >= {least} of {base} (measured {value:.2f})")
    for where, value, most in (
        ("each at its capacity", r.cpu_multiple, CPU_MULTIPLE_MAX),
        (f"both at {FIXED_RATE}/s", r.cpu_multiple_fixed, CPU_MULTIPLE_FIXED_MAX),
    ):
        if value is not None and value > most:
            out.append(f"CPU per transfer <= {most}x {base}, {where} (measured {value:.2f}x)")
    return out


def minimal_line(r: Results) -> str:
    """The suite's figures over the minimal monolith, printed beside the verdict, not judged."""
    shown = ", ".join(f"{k} {v:.2f}" for k, v in sorted(r.minimal.items())) or "none measured"
    return f"over the minimal monolith (the floor; not judged): {shown}"


def missed(r: Results) -> list[str]:
    """Every target a measured figure misses, with the figure."""
    out: list[str] = []
    if r.idle is not None:
        out += _missed_idle(r.idle)
    out += _missed_ratios(r)
    if r.counts is not None:
        out += _missed_counts(r.counts)
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
            ("customers ratio over the same-contract baseline", r.customers_ratio),
            ("customers half load", r.half_load.get("customers")),
        ],
        "transfers": [
            ("transfers ratio over the same-contract baseline", r.transfers_ratio),
            ("CPU per transfer over the same-contract baseline, each at its capacity", r.cpu_multiple),
            (f"CPU per transfer over the same-contract baseline at {FIXED_RATE}/s", r.cpu_multiple_fixed),
            ("sequential", r.sequential),
            ("transfers half load", r.half_load.get("transfers")),
        ],
        "overload": [("overload", r.overload or None)],
        "sizing": [("sizing inputs", r.sizing), ("counts per transfer", r.counts)],
    }
    for part in sorted(r.parts):
        if part not in wanted:
            out.append(f"unknown part {part!r} (BENCH_PARTS: customers, transfers, overload, sizing)")
            continue
        out += [f"{name} not measured" for name, value in wanted[part] if value is None]
    return out


def verdict(r: Results) -> list[str]:
    """The last lines of make bench: the minimal monolith's ratios (not judged) when measured,
    then one ``MISSED:`` per missed target, one ``ERROR:`` per part not measured, or one line
    saying every target was met."""
    beside = [minimal_line(r)] if r.minimal else []
    lines = [f"MISSED: {m}" for m in missed(r)] + [f"ERROR: {e}" for e in errors(r)]
    return beside + (lines or [f"bench: every target met ({', '.join(sorted(r.parts))})"])


def exit_code(r: Results) -> int:
    return 1 if missed(r) or errors(r) else 0

"""``make bench-history``'s verdict (docs/performance/index.md, "A long history"): pure, unit-tested.

With ``BENCH_HISTORY_TRANSFERS`` (1,000,000) transfers in the database, the suite's transfer
capacity and its CPU per transfer stay within :data:`TOLERANCE` of the same figures on the
empty database measured earlier in the same run, and the ledger's ``verify_journal`` and
``reconcile`` each take at most :data:`AUDIT_S_PER_100K` seconds per 100,000 journal entries.
Every missed target is a ``MISSED:`` line, every figure not measured an ``ERROR:`` line, and
either exits 1 (as tools.bench.targets does for ``make bench``). A seeded database the two
checks do not find clean is an error: the history is not the suite's, so nothing measured on
it counts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

TOLERANCE = 0.10  # the history may cost at most this share of capacity or add it to CPU per transfer
AUDIT_S_PER_100K = 30.0  # seconds per 100,000 journal entries, each check
PER = 100_000


@dataclass
class Figures:
    """One side's measurement: the capacity (transfers per second) and CPU per transfer (ms)."""

    capacity: float | None = None
    cpu_ms: float | None = None


@dataclass
class History:
    asked: int  # transfers the history should hold
    seeded: int | None = None  # transfers the seeder wrote
    empty: Figures = field(default_factory=Figures)
    full: Figures = field(default_factory=Figures)
    entries: int | None = None  # journal entries verify_journal walked
    verify_s: float | None = None
    reconcile_s: float | None = None
    findings: list[str] | None = None  # what the two checks found (empty: clean)
    errors: list[str] = field(default_factory=list)  # why a part measured nothing


def ratio(full: float | None, empty: float | None) -> float | None:
    """``full`` over ``empty`` (None when either is missing or ``empty`` is not positive)."""
    if full is None or empty is None or empty <= 0:
        return None
    return full / empty


def per_100k(seconds: float | None, entries: int | None) -> float | None:
    """Seconds per 100,000 journal entries (None without a positive count)."""
    if seconds is None or not entries:
        return None
    return seconds * PER / entries


def missed(h: History) -> list[str]:
    """Every target a measured figure misses, with the figure."""
    out = []
    capacity = ratio(h.full.capacity, h.empty.capacity)
    if capacity is not None and capacity < 1 - TOLERANCE:
        out.append(
            f"transfer capacity with the history >= {1 - TOLERANCE:.2f} of the empty database's"
            f" (measured {capacity:.2f}: {h.full.capacity:.0f}/s against {h.empty.capacity:.0f}/s)"
        )
    cpu = ratio(h.full.cpu_ms, h.empty.cpu_ms)
    if cpu is not None and cpu > 1 + TOLERANCE:
        out.append(
            f"CPU per transfer with the history <= {1 + TOLERANCE:.2f}x the empty database's"
            f" (measured {cpu:.2f}x: {h.full.cpu_ms:.2f} ms against {h.empty.cpu_ms:.2f} ms)"
        )
    for name, seconds in (("verify_journal", h.verify_s), ("reconcile", h.reconcile_s)):
        rate = per_100k(seconds, h.entries)
        if rate is not None and rate > AUDIT_S_PER_100K:
            out.append(
                f"{name} <= {AUDIT_S_PER_100K:.0f} s per 100,000 journal entries"
                f" (measured {rate:.1f} s: {seconds:.0f} s for {h.entries} entries)"
            )
    return out


def errors(h: History) -> list[str]:
    """Figures asked for and missing, and a history the checks did not find clean."""
    out = list(h.errors)
    if h.seeded is None or h.seeded < h.asked:
        out.append(f"history seeded {h.seeded or 0} of {h.asked} transfers")
    if h.findings:
        out.append("the seeded database is not clean: " + "; ".join(h.findings[:5]))
    wanted = (
        ("transfer capacity on the empty database", h.empty.capacity),
        ("CPU per transfer on the empty database", h.empty.cpu_ms),
        ("transfer capacity with the history", h.full.capacity),
        ("CPU per transfer with the history", h.full.cpu_ms),
        ("verify_journal's time", h.verify_s),
        ("reconcile's time", h.reconcile_s),
        ("the journal entries verify_journal walked", h.entries or None),
        ("the two checks' findings", h.findings),
    )
    out += [f"{name} not measured" for name, value in wanted if value is None]
    return out


def verdict(h: History) -> list[str]:
    """The last lines: one ``MISSED:`` per missed target, one ``ERROR:`` per missing figure,
    or one line saying every target was met."""
    lines = [f"MISSED: {m}" for m in missed(h)] + [f"ERROR: {e}" for e in errors(h)]
    return lines or [f"bench-history: every target met ({h.asked} transfers)"]


def exit_code(h: History) -> int:
    return 1 if missed(h) or errors(h) else 0

"""What ``make bench`` measured, kept and drawn: every configuration's throughput and p50/p99,
written as ``bench-results.json`` and ``bench-results.png`` (matplotlib, a development
dependency) so a run can be seen, not only read, and compared with the next one."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

RESULTS: list[dict[str, Any]] = []


def record(part: str, config: str, stats: dict[str, float], extra: dict[str, Any] | None = None) -> None:
    """One measured configuration (``part``: customers, transfers, sweep); ``extra``: figures of
    its own kept beside (the sweep's CPU per transfer and the capacity it was judged against)."""
    RESULTS.append(
        {
            "part": part,
            "config": config,
            "rps": round(float(stats.get("ok_rps", stats.get("rps", 0.0))), 1),
            "p50_ms": round(float(stats.get("p50_ms", 0.0)), 2),
            "p99_ms": round(float(stats.get("p99_ms", 0.0)), 2),
            "errors": int(stats.get("errors", 0)),
            "load_avg": round(os.getloadavg()[0], 2),
            **(extra or {}),
        }
    )


def write(directory: Path) -> tuple[Path, Path | None]:
    """The JSON always; the PNG when matplotlib is installed (it is in the dev group)."""
    directory.mkdir(parents=True, exist_ok=True)
    data = directory / "bench-results.json"
    data.write_text(json.dumps({"at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "results": RESULTS}, indent=2))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return data, None
    parts = sorted({r["part"] for r in RESULTS})
    if not parts:  # e.g. BENCH_PARTS=overload alone: nothing to draw
        return data, None
    fig, axes = plt.subplots(len(parts), 2, figsize=(12, 3.2 * max(1, len(parts))), squeeze=False)
    for row, part in enumerate(parts):
        rows = [r for r in RESULTS if r["part"] == part]
        names = [r["config"] for r in rows]
        ax = axes[row][0]
        ax.barh(names, [r["rps"] for r in rows], color="#3b7dd8")
        ax.set_title(f"{part}: throughput (req/s)")
        for y, r in enumerate(rows):
            ax.text(r["rps"], y, f" {r['rps']:.0f}", va="center", fontsize=8)
        ax = axes[row][1]
        ys = range(len(rows))
        ax.barh([y + 0.2 for y in ys], [r["p99_ms"] for r in rows], height=0.4, label="p99", color="#d8643b")
        ax.barh([y - 0.2 for y in ys], [r["p50_ms"] for r in rows], height=0.4, label="p50", color="#7fb069")
        ax.set_yticks(list(ys), names)
        ax.set_xscale("log")
        ax.set_title(f"{part}: latency (ms, log scale)")
        ax.legend(loc="lower right", fontsize=8)
    fig.suptitle(f"make bench, {os.cpu_count()} cores, {time.strftime('%Y-%m-%d %H:%M')}")
    fig.tight_layout()
    png = directory / "bench-results.png"
    fig.savefig(png, dpi=110)
    plt.close(fig)
    return data, png

"""make bench keeps its figures and draws them: JSON and a PNG per run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tools.bench import plot

pytestmark = pytest.mark.unit


def test_results_are_written_and_drawn(tmp_path: Path) -> None:
    plot.RESULTS.clear()
    plot.record("transfers", "monolith (baseline)", {"ok_rps": 950.0, "p50_ms": 9.1, "p99_ms": 31.0})
    plot.record("transfers", "suite e2e uniform", {"rps": 107.4, "p50_ms": 120.0, "p99_ms": 406.0})
    plot.record("customers", "bare (baseline)", {"rps": 9000.0, "p50_ms": 1.1, "p99_ms": 4.0, "errors": 2})
    data, png = plot.write(tmp_path)
    saved = json.loads(data.read_text())["results"]
    assert [(r["part"], r["config"], r["rps"]) for r in saved] == [
        ("transfers", "monolith (baseline)", 950.0),
        ("transfers", "suite e2e uniform", 107.4),
        ("customers", "bare (baseline)", 9000.0),
    ]
    assert saved[2]["errors"] == 2 and saved[1]["p99_ms"] == 406.0
    assert png is not None and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    plot.RESULTS.clear()

"""The Grafana dashboard and docs/operations.md name the same metrics, REQUIRED among
them (docs/operations.md, "Metrics"), so what the services emit and what the dashboard reads agree."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
REQUIRED = {
    "sluice_http_requests_total",
    "sluice_http_request_duration_seconds",
    "sluice_messages_consumed_total",
    "sluice_messages_failed_total",
    "sluice_consumer_lag",
    "sluice_batch_size",
    "sluice_outbox_backlog",
    "sluice_webhook_deliveries",
    "sluice_dead_letters_total",
}


def _documented() -> set[str]:
    text = (ROOT / "docs" / "operations.md").read_text()
    return set(re.findall(r"^\| `(sluice_[a-z_]+)` \|", text, re.M))


def _queried() -> set[str]:
    dash = json.loads((ROOT / "deploy" / "grafana-dashboard.json").read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    assert exprs and all(e.count("(") == e.count(")") for e in exprs)
    names = {m for e in exprs for m in re.findall(r"\bsluice_[a-z_]+", e)}
    return {re.sub(r"_(bucket|sum|count)$", "", n) for n in names}


def test_docs_name_the_contract_metrics() -> None:
    assert _documented() >= REQUIRED


def test_dashboard_reads_the_contract_metrics_and_only_documented_ones() -> None:
    assert REQUIRED <= _queried() <= _documented()


def test_dashboard_is_importable() -> None:
    dash = json.loads((ROOT / "deploy" / "grafana-dashboard.json").read_text())
    assert dash["uid"] and dash["title"] and dash["schemaVersion"] >= 30
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))
    for p in dash["panels"]:
        pos = p["gridPos"]
        assert pos["x"] >= 0 and pos["x"] + pos["w"] <= 24
        if p["type"] != "row":
            assert p["targets"] and p["datasource"]["uid"] == "${datasource}"
    histograms = [
        t["expr"] for p in dash["panels"] for t in p.get("targets", []) if "histogram_quantile" in t["expr"]
    ]
    assert histograms and all("_bucket" in e and "le" in e for e in histograms)

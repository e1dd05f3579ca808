"""Every service answers ``GET /metrics`` in the Prometheus text format (docs/operations.md,
"Metrics")."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import Stack, Tenant, customer_body

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def _families(url: str) -> dict[str, object]:
    r = httpx.get(url + "/metrics", timeout=10)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain")
    return {f.name: f for f in text_string_to_metric_families(r.text)}


def test_every_service_serves_metrics_with_histograms(stack: Stack, tenant: Tenant) -> None:
    assert tenant.post("/v1/customers", customer_body()).status_code == 201
    assert stack.admin_call("list_tenants", limit=1).status_code == 200
    for url in (stack.gateways[0].metrics_url, stack.admin):
        fams = _families(url)
        assert "sluice_http_requests" in fams, sorted(fams)
        assert "sluice_http_request_duration_seconds" in fams
    deadline = time.monotonic() + 20
    for name in ("compliance", "webhooks"):
        fams = _families(stack.procs[name].url)
        assert "sluice_batch_size" in fams and "sluice_consumer_lag" in fams, sorted(fams)
        assert "sluice_received_messages" in fams
    while True:  # one of the two ledgers took the customer
        ledgers = [_families(p.url) for p in stack.ledgers]
        consumed = [
            s.value
            for fams in ledgers
            for s in fams["sluice_messages_consumed"].samples  # type: ignore[attr-defined]
            if s.name.endswith("_total")
        ]
        if sum(consumed) >= 1:
            break
        assert time.monotonic() < deadline
        time.sleep(0.5)
    assert "sluice_outbox_backlog" in ledgers[0]


def test_gateway_serves_the_asyncapi_document_of_every_channel(stack: Stack) -> None:
    r = httpx.get(stack.gateway + "/schema/asyncapi.json", timeout=10)
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc["asyncapi"].startswith("3.")
    addresses = {c["address"] for c in doc["channels"].values()}
    assert {
        "sluice.compliance.commands",
        "sluice.ledger.commands",
        "sluice.events",
        "sluice.dlq",
    } <= addresses
    assert "sluice.replies.{instance}" in addresses
    schemas = doc["components"]["schemas"]
    transfer = schemas["CreateTransfer"]
    assert (
        transfer["properties"]["type"]["enum"] == ["transfer.create.v1"] or "type" in transfer["properties"]
    )
    assert "amount" in transfer["properties"] and "ctx" in transfer["properties"]
    for message in doc["components"]["messages"].values():  # every payload is a real schema
        name = message["payload"]["$ref"].rsplit("/", 1)[1]
        assert schemas[name].get("properties"), name


def _selectors(expr: str) -> list[tuple[str, set[str]]]:
    """(metric, labels the query reads of it) for each metric of a PromQL expression: labels
    in its selector and in the ``by (...)`` clause of the aggregation that encloses it."""
    out = []
    by = set(re.findall(r"by \(([^)]*)\)", expr))
    grouped = {x.strip() for b in by for x in b.split(",")}
    for name, sel in re.findall(r"\b(sluice_[a-z_]+)(?:\{([^}]*)\})?", expr):
        labels = set(re.findall(r"([a-z_]+)\s*(?:=~|!=|!~|=)", sel or ""))
        out.append((re.sub(r"_(bucket|sum|count)$", "", name), labels | grouped))
    return out


def test_the_dashboard_reads_only_what_the_services_emit(stack: Stack, tenant: Tenant) -> None:
    """Every metric and label a dashboard query names exists on some service's ``/metrics``
    (labels of a family with no series yet are taken from its declaration). ``job`` and
    ``instance`` are the scrape's own labels (deploy/prometheus.yml), ``le`` the buckets'."""
    from prometheus_client import REGISTRY

    import common.metrics  # noqa: F401 - declares the suite's collectors in this registry
    import webhooks.metrics  # noqa: F401

    assert tenant.post("/v1/customers", customer_body()).status_code == 201
    emitted: dict[str, set[str]] = {}
    urls = {p.metrics_url for p in (*stack.procs.values(), *stack.ledgers, *stack.gateways)}
    for url in urls:
        for fam in _families(url).values():
            labels = emitted.setdefault(fam.name, set())  # type: ignore[attr-defined]
            for s in fam.samples:  # type: ignore[attr-defined]
                labels |= set(s.labels) - {"le"}
    declared = {
        name: set(getattr(c, "_labelnames", ()))
        for name, c in REGISTRY._names_to_collectors.items()  # noqa: SLF001 - read-only
    }
    dash = json.loads((ROOT / "deploy" / "grafana-dashboard.json").read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    scrape_labels = {"job", "instance", "le"}
    for expr in exprs:
        for name, labels in _selectors(expr):
            family = re.sub(r"_total$", "", name)
            assert family in emitted, f"{name}: no service emits it ({expr})"
            known = emitted[family] | declared.get(name, set()) | declared.get(family, set())
            unknown = labels - scrape_labels - known
            assert not unknown, f"{name}: {unknown} unknown ({expr})"
    # the scrape jobs configured, not the exporters' jobs left commented out for a platform to enable
    jobs = set(
        re.findall(r"^\s*- job_name: (\w+)", (ROOT / "deploy" / "prometheus.yml").read_text(), re.MULTILINE)
    )
    assert jobs == {"gateway", "admin", "ledger", "compliance", "webhooks"}

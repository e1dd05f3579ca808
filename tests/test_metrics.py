"""Every service answers ``GET /metrics`` in the Prometheus text format (contract 12.5)."""

from __future__ import annotations

import time

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import Stack, Tenant, customer_body

pytestmark = pytest.mark.integration


def _families(url: str) -> dict[str, object]:
    r = httpx.get(url + "/metrics", timeout=10)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain")
    return {f.name: f for f in text_string_to_metric_families(r.text)}


def test_every_service_serves_metrics_with_histograms(stack: Stack, tenant: Tenant) -> None:
    assert tenant.post("/v1/customers", customer_body()).status_code == 201
    assert stack.admin_call("list_tenants", limit=1).status_code == 200
    for url in (stack.gateway, stack.admin):
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

"""The committed SDK halves are what the generators make of the gateway's current OpenAPI
document: a change to an endpoint or a struct without `make clients` fails here."""

from __future__ import annotations

import pytest

from tools.codegen import clients

pytestmark = pytest.mark.unit


def test_the_committed_clients_match_the_current_document() -> None:
    stale = clients.stale()
    assert stale == [], f"run `make clients`: {stale}"


def test_the_generators_read_the_document_with_only_the_stated_rewrites() -> None:
    doc = clients.document()
    gen = clients.for_generators(doc)
    assert gen["paths"].keys() == doc["paths"].keys()
    body = gen["paths"]["/v1/payouts"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/TransferCreate"}
    assert gen["components"]["schemas"]["ErrorEnvelope"]["properties"]["success"] == {"const": False}
    modes = {
        p["schema"].get("$ref")
        for ops in gen["paths"].values()
        for op in ops.values()
        for p in op["parameters"]
        if p["name"] == "x-service-mode"
    }
    assert modes == {"#/components/schemas/ServiceMode"}
    keys = [
        p["required"]
        for ops in gen["paths"].values()
        for op in ops.values()
        for p in op["parameters"]
        if p["name"] == "Idempotency-Key"
    ]
    assert keys and not any(keys)  # the layer supplies the key
    assert doc["components"]["schemas"]["ErrorEnvelope"]["properties"]["success"] == {"enum": [False]}

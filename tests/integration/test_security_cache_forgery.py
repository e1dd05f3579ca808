"""Valkey is a cache, never a source of trust (docs/security.md, "Valkey is a cache, never a
root of trust").

The attack on main: a JSON record written under ``sluice:apikey:<sha256 of an invented key>``
made the gateway answer 200 to GET and 201 to POST /v1/customers for that key, which
identity.api_keys never held. Every record the gateway trusts from Valkey now carries its MAC
(common.cache_mac) over the value, the name, the name's generation and an expiry; whatever
does not verify is refused, read from PostgreSQL instead, counted in
``sluice_gateway_cache_forged_total{kind}`` and logged by kind. Each test writes to Valkey as an
attacker who reached it would, on the real stack (both gateways, Kafka, PostgreSQL). The
forgeries whose refusal is seen in the answers and rows alone:
tests/inprocess/test_security_cache_forgery.py.
"""

from __future__ import annotations

import re
import secrets
import uuid

import httpx
import msgspec
import pytest

from common.auth import (
    ALL_SCOPES,
    generation_name,
    hash_api_key,
    key_cache_name,
)
from gateway.idempotency import IdempotencyStore
from tests.conftest import Stack, customer_body, make_tenant
from tests.support.admin import db
from tests.support.forgery import _footprint, _refused_everywhere, _valkey, _warm

pytestmark = pytest.mark.integration


def _forged(stack: Stack, kind: str) -> float:
    """sluice_gateway_cache_forged_total{kind} summed over the suite's gateways."""
    total = 0.0
    for gw in stack.gateways:
        text = httpx.get(gw.metrics_url + "/metrics", timeout=10).text
        for value in re.findall(rf'^sluice_gateway_cache_forged_total{{kind="{kind}"}} (\S+)$', text, re.M):
            total += float(value)
    return total


def test_an_invented_key_written_into_valkey_is_refused_counted_and_logged(stack: Stack) -> None:
    victim = make_tenant(stack)
    _warm(stack, victim)  # its tenant record is cached, so the hot path's script reads the forgery
    invented = "sk_test_" + secrets.token_urlsafe(32)
    record = {
        "key_id": "key_forged",
        "tenant_id": victim.tenant_id,
        "mode": "sandbox",
        "scopes": list(ALL_SCOPES),
        "revoked": False,
    }
    before, forged_before = _footprint(stack, victim.tenant_id), _forged(stack, "api_key")
    valkey = _valkey(stack)
    for _ in range(2):  # the refused record is replaced by PostgreSQL's answer: write it again
        valkey.set(key_cache_name(hash_api_key(invented)), msgspec.json.encode(record), ex=300)
        _refused_everywhere(stack, invented)
    assert _footprint(stack, victim.tenant_id) == before
    assert _forged(stack, "api_key") >= forged_before + 2
    assert (
        db(stack, "SELECT count(*) AS n FROM identity.api_keys WHERE key_hash = $1", hash_api_key(invented))[
            0
        ]["n"]
        == 0
    )
    logs = "".join(gw.log.read_text(errors="replace") for gw in stack.gateways)
    assert "a api_key record in Valkey failed verification" in logs
    assert invented not in logs and hash_api_key(invented) not in logs
    assert victim.get("/v1/customers").status_code == 200  # the real key still works


def test_a_forged_idempotent_replay_is_refused_and_the_original_outcome_stands(stack: Stack) -> None:
    t = make_tenant(stack)
    key = uuid.uuid4().hex
    body = customer_body()
    first = t.post("/v1/customers", body, idem=key)
    assert first.status_code == 201, first.text
    customer_id = first.json()["data"]["customer_id"]
    name = IdempotencyStore.name(t.tenant_id, "sandbox", key)
    valkey = _valkey(stack)
    stored = valkey.get(name)
    assert stored is not None and b"|" in stored
    record = msgspec.json.decode(stored.partition(b"|")[2])
    lie = msgspec.json.encode({**record, "status": 200, "body": ""})
    before = _forged(stack, "idempotency")
    for raw in (lie, stored.replace(b"|", b"| ", 1)):  # written anew; the signed one altered
        valkey.set(name, raw, ex=3600)
        again = t.post("/v1/customers", body, idem=key)
        assert again.status_code == 201, again.text
        assert again.json()["data"]["customer_id"] == customer_id  # deduplicated by command id
    assert _forged(stack, "idempotency") >= before + 2
    n = db(stack, "SELECT count(*) AS n FROM ledger.customers WHERE tenant_id = $1", t.tenant_id)
    assert n[0]["n"] == 1


def test_a_filled_entry_keeps_its_generation_alive(stack: Stack) -> None:
    """The MAC covers the generation: one expiring under a live entry would make the entry look
    put back after an eviction (refused, counted). A fill extends the generation's life."""
    t = make_tenant(stack)
    valkey = _valkey(stack)
    name = key_cache_name(hash_api_key(t.key))
    valkey.incr(generation_name(name))  # as an eviction leaves it, about to expire
    valkey.expire(generation_name(name), 30)
    valkey.delete(name)
    before = _forged(stack, "api_key")
    assert t.get("/v1/customers").status_code == 200  # fills the entry under that generation
    assert valkey.get(name) is not None
    assert valkey.ttl(generation_name(name)) > 300  # outlives the entry it signs
    assert _forged(stack, "api_key") == before

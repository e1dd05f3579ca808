"""Valkey is a cache, never a source of trust (docs/security.md, "Valkey is a cache, never a
root of trust").

The attack on main: a JSON record written under ``sluice:apikey:<sha256 of an invented key>``
made the gateway answer 200 to GET and 201 to POST /v1/customers for that key, which
identity.api_keys never held. Every record the gateway trusts from Valkey now carries its MAC
(common.cache_mac) over the value, the name, the name's generation and an expiry; whatever
does not verify is refused, read from PostgreSQL instead, counted in
``sluice_gateway_cache_forged_total{kind}`` and logged by kind. Each test writes to Valkey as an
attacker who reached it would, on the real stack (both gateways, Kafka, PostgreSQL).
"""

from __future__ import annotations

import re
import secrets
import uuid

import httpx
import msgspec
import pytest
from redis import Redis

from common.auth import (
    ALL_SCOPES,
    generation_name,
    hash_api_key,
    key_cache_name,
    tenant_cache_name,
    token_cache_name,
)
from gateway.idempotency import IdempotencyStore
from tests.conftest import Stack, Tenant, customer_body, make_tenant
from tests.support.admin import db
from tests.support.gateway import call

pytestmark = pytest.mark.integration


def _valkey(stack: Stack) -> Redis:
    return Redis.from_url(stack.stores.redis_url)


def _forged(stack: Stack, kind: str) -> float:
    """sluice_gateway_cache_forged_total{kind} summed over the suite's gateways."""
    total = 0.0
    for gw in stack.gateways:
        text = httpx.get(gw.metrics_url + "/metrics", timeout=10).text
        for value in re.findall(rf'^sluice_gateway_cache_forged_total{{kind="{kind}"}} (\S+)$', text, re.M):
            total += float(value)
    return total


def _footprint(stack: Stack, tenant_id: str) -> tuple[int, ...]:
    """What a request that moved anything would change: customers, balances, events, deliveries."""
    q = [
        "SELECT count(*) AS n FROM ledger.customers WHERE tenant_id = $1",
        "SELECT count(*) AS n FROM ledger.accounts WHERE tenant_id = $1",
        "SELECT coalesce(sum(balance), 0)::text AS n FROM ledger.accounts WHERE tenant_id = $1",
        "SELECT count(*) AS n FROM webhooks.events WHERE tenant_id = $1",
        "SELECT count(*) AS n FROM webhooks.deliveries WHERE tenant_id = $1",
    ]
    return tuple(str(db(stack, sql, tenant_id)[0]["n"]) for sql in q)  # type: ignore[misc]


def _refused_everywhere(stack: Stack, key: str, status: int = 401) -> None:
    for gw in (0, 1):
        r = call(stack, "GET", "/v1/customers", key=key, gateway=gw)
        assert r.status_code == status, r.text
        r = call(
            stack, "POST", "/v1/customers", key=key, body=customer_body(), idem=uuid.uuid4().hex, gateway=gw
        )
        assert r.status_code == status, r.text


def _warm(stack: Stack, t: Tenant) -> None:
    """The tenant's key and tenant records cached, as after any request."""
    for gw in (0, 1):
        assert call(stack, "GET", "/v1/customers", key=t.key, gateway=gw).status_code == 200


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


def test_a_real_record_copied_to_an_invented_name_is_refused(stack: Stack) -> None:
    t = make_tenant(stack)
    _warm(stack, t)
    valkey = _valkey(stack)
    real = valkey.get(key_cache_name(hash_api_key(t.key)))
    assert real is not None and b"|" in real  # sealed (readable value after the MAC)
    invented = "sk_test_" + secrets.token_urlsafe(32)
    before = _footprint(stack, t.tenant_id)
    valkey.set(key_cache_name(hash_api_key(invented)), real, ex=300)
    _refused_everywhere(stack, invented)
    assert _footprint(stack, t.tenant_id) == before


def test_a_key_record_restored_from_before_its_revocation_is_refused(stack: Stack) -> None:
    t = make_tenant(stack)
    _warm(stack, t)
    valkey = _valkey(stack)
    name = key_cache_name(hash_api_key(t.key))
    snapshot = valkey.get(name)
    assert snapshot is not None
    assert stack.admin_call("revoke_api_key", key_id=t.key_id).status_code == 200
    _refused_everywhere(stack, t.key)
    valkey.set(name, snapshot, ex=300)  # put back as it was before the revocation
    _refused_everywhere(stack, t.key)


def test_a_tenant_record_restored_from_before_disable_tenant_is_refused(stack: Stack) -> None:
    t = make_tenant(stack)
    _warm(stack, t)
    valkey = _valkey(stack)
    name = tenant_cache_name(t.tenant_id)
    snapshot = valkey.get(name)
    assert snapshot is not None
    assert stack.admin_call("disable_tenant", tenant_id=t.tenant_id).status_code == 200
    _refused_everywhere(stack, t.key, 403)
    before = _footprint(stack, t.tenant_id)
    valkey.set(name, snapshot, ex=300)  # the record that said disabled: false, put back
    _refused_everywhere(stack, t.key, 403)
    unsigned = msgspec.json.decode(snapshot.partition(b"|")[2])
    valkey.set(name, msgspec.json.encode({**unsigned, "disabled": False}), ex=300)  # or written anew
    _refused_everywhere(stack, t.key, 403)
    assert _footprint(stack, t.tenant_id) == before


def test_an_access_token_record_restored_from_before_its_revocation_is_refused(stack: Stack) -> None:
    t = make_tenant(stack)
    r = stack.admin_call("issue_access_token", tenant_id=t.tenant_id, mode="sandbox", scopes=list(ALL_SCOPES))
    assert r.status_code == 200, r.text
    token, jti = r.json()["data"]["access_token"], r.json()["data"]["jti"]
    for gw in (0, 1):
        assert call(stack, "GET", "/v1/customers", key=token, gateway=gw).status_code == 200
    valkey = _valkey(stack)
    snapshot = valkey.get(token_cache_name(jti))
    assert snapshot is not None
    assert stack.admin_call("revoke_access_token", jti=jti).status_code == 200
    _refused_everywhere(stack, token)
    valkey.set(token_cache_name(jti), snapshot, ex=300)
    gen = valkey.get(generation_name(token_cache_name(jti)))
    _refused_everywhere(stack, token)
    assert valkey.get(generation_name(token_cache_name(jti))) == gen  # refused by its generation


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

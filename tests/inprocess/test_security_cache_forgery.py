"""Valkey is a cache, never a source of trust (docs/security.md, "Valkey is a cache, never a
root of trust"): a real record copied to an invented name, and key, tenant and access-token
records restored from before their revocation or disabling, are refused by both gateways and
change nothing. Each test writes to Valkey as an attacker who reached it would. The invented
key and the forged idempotent replay, counted in ``sluice_gateway_cache_forged_total`` and
logged by kind, are on the stack: tests/integration/test_security_cache_forgery.py.
"""

from __future__ import annotations

import secrets

import msgspec
import pytest

from common.auth import (
    ALL_SCOPES,
    generation_name,
    hash_api_key,
    key_cache_name,
    tenant_cache_name,
    token_cache_name,
)
from tests.conftest import Stack, make_tenant
from tests.support.forgery import _footprint, _refused_everywhere, _valkey, _warm
from tests.support.gateway import call

pytestmark = pytest.mark.inprocess


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

"""Valkey is a cache. Emptied (a SIGKILLed Valkey without persistence starts
again empty: make chaos does that to the suite under load), what the gateways kept there is
rebuilt from PostgreSQL: an active key works again on both gateways, a revoked key and a
disabled tenant's key stay refused, and a request retried with its Idempotency-Key gets its
original outcome (its deterministic command id, deduplicated by the service that owns it), not
a second effect. Here the session's Valkey is emptied with FLUSHALL: the same empty state
without cutting the other tests' connections."""

from __future__ import annotations

import uuid

import pytest
from redis import Redis

from tests.conftest import Stack, Tenant, customer_body, make_tenant
from tests.support.admin import db
from tests.support.gateway import call

pytestmark = pytest.mark.inprocess


def _statuses(stack: Stack, t: Tenant) -> set[int]:
    return {call(stack, "GET", "/v1/customers", key=t.key, gateway=gw).status_code for gw in (0, 1)}


def test_an_emptied_valkey_is_rebuilt_from_postgresql(stack: Stack) -> None:
    active, revoked, disabled = (make_tenant(stack) for _ in range(3))
    for t in (active, revoked, disabled):
        assert _statuses(stack, t) == {200}  # every record cached on both gateways
    assert stack.admin_call("revoke_api_key", key_id=revoked.key_id).status_code == 200
    assert stack.admin_call("disable_tenant", tenant_id=disabled.tenant_id).status_code == 200
    idem, body = uuid.uuid4().hex, customer_body()
    first = call(stack, "POST", "/v1/customers", key=active.key, body=body, idem=idem)
    assert first.status_code == 201, first.text
    with Redis.from_url(stack.stores.redis_url) as valkey:
        valkey.flushall()
        assert valkey.dbsize() == 0
    assert _statuses(stack, active) == {200}
    assert _statuses(stack, revoked) == {401}
    assert _statuses(stack, disabled) == {403}
    again = call(stack, "POST", "/v1/customers", key=active.key, body=body, idem=idem, gateway=1)
    assert again.status_code == 201, again.text
    assert again.json()["data"]["customer_id"] == first.json()["data"]["customer_id"]
    rows = db(stack, "SELECT count(*) AS n FROM ledger.customers WHERE tenant_id = $1", active.tenant_id)
    assert rows[0]["n"] == 1

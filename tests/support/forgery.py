"""Valkey written as an attacker who reached it would write it, and what a refused forgery must
leave as it was: shared by the cache-forgery tests of both tiers (tests/inprocess and
tests/integration test_security_cache_forgery.py; docs/security.md, "Valkey is a cache, never
a root of trust")."""

from __future__ import annotations

import uuid

from redis import Redis

from tests.conftest import Stack, Tenant, customer_body
from tests.support.admin import db
from tests.support.gateway import call


def _valkey(stack: Stack) -> Redis:
    return Redis.from_url(stack.stores.redis_url)


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

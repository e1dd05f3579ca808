"""A cache that cannot be rolled back (docs/security.md, "A cache that cannot be rolled back").

The attack on the tree before: every record the gateway trusts from Valkey carries its MAC,
and the MAC covers the record's generation, but the generation counter was read from the same
Valkey, unauthenticated. Restoring a record taken before a revocation and deleting its
``:gen`` (or setting it back) made a revoked key answer 200 and move money, a revoked access
token answer 200 and a disabled tenant's key read again, for up to the record's 300 s. Now whether a cached
credential is still good is decided from what the gateway learned from PostgreSQL and admin's
control events (gateway.revocations), held in memory; the generation only speeds evictions up.

Each test writes Valkey as an attacker who reached it would (the stack's default user), on
the real stack (both gateways, Kafka, PostgreSQL): records restored as they were before the
change and their generation keys with them, again and again.
"""

from __future__ import annotations

import time

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
from common.settings import Settings
from tests.conftest import Stack, Tenant, make_tenant
from tests.support.admin import db
from tests.support.flows import book, created, funded
from tests.support.gateway import call
from tests.support.wait import eventually

pytestmark = pytest.mark.inprocess

#: The longest a revocation may take to bite on any gateway, whatever Valkey holds.
BOUND_S = Settings().gateway_revocation_trust_s


def _valkey(stack: Stack) -> Redis:
    return Redis.from_url(stack.stores.redis_url)


def _snapshot(valkey: Redis, *names: str) -> dict[str, tuple[bytes, bytes | None]]:
    """Each record and its generation as they are now (the records sealed by a gateway)."""
    taken = {name: (valkey.get(name), valkey.get(generation_name(name))) for name in names}
    assert all(isinstance(raw, bytes) and b"|" in raw for raw, _ in taken.values()), taken
    return taken  # type: ignore[return-value]


def _roll_back(valkey: Redis, snapshot: dict[str, tuple[bytes, bytes | None]]) -> None:
    """The records put back as they were and their generations with them: deleted where there
    was none (as the finding did), set back where there was one."""
    for name, (raw, gen) in snapshot.items():
        valkey.set(name, raw, ex=300)
        if gen is None:
            valkey.delete(generation_name(name))
        else:
            valkey.set(generation_name(name), gen)


def _money(stack: Stack, tenant_id: str) -> tuple[str, str]:
    """Every balance of the tenant, and its transfers: what a request that moved money changes."""
    balances = db(
        stack,
        "SELECT coalesce(string_agg(balance::text, ',' ORDER BY id), '') AS b FROM ledger.accounts"
        " WHERE tenant_id = $1",
        tenant_id,
    )
    transfers = db(stack, "SELECT count(*)::text AS n FROM ledger.transfers WHERE tenant_id = $1", tenant_id)
    return str(balances[0]["b"]), str(transfers[0]["n"])


def _attempts(stack: Stack, credential: str, wallets: tuple[str, str]) -> list[int]:
    """A read and a transfer of 1.00 on each gateway: the statuses."""
    statuses = []
    for gw in (0, 1):
        statuses.append(call(stack, "GET", "/v1/customers", key=credential, gateway=gw).status_code)
        body = book(wallets[0], wallets[1], "1.00")
        r = call(
            stack,
            "POST",
            "/v1/transfers",
            key=credential,
            body=body,
            idem=body["idempotency_key"],
            gateway=gw,
        )
        statuses.append(r.status_code)
    return statuses


def _warm(stack: Stack, credential: str) -> None:
    for gw in (0, 1):
        assert call(stack, "GET", "/v1/customers", key=credential, gateway=gw).status_code == 200


def _refused_after_rollbacks(
    stack: Stack,
    t: Tenant,
    credential: str,
    snapshot: dict[str, tuple[bytes, bytes | None]],
    wallets: tuple[str, str],
    status: int,
) -> None:
    """Once the revocation has bitten, the cache rolled back again and again: still refused
    on both gateways, and no money moves."""
    valkey = _valkey(stack)

    def bitten() -> bool:
        statuses = _attempts(stack, credential, wallets)
        assert set(statuses) == {status}, statuses
        return True

    eventually(bitten, timeout=BOUND_S + 5, what="the change refused on both gateways")
    money = _money(stack, t.tenant_id)
    for _ in range(5):
        _roll_back(valkey, snapshot)
        assert all(valkey.get(name) == raw for name, (raw, _) in snapshot.items())  # the attack took
        assert _attempts(stack, credential, wallets) == [status] * 4
        time.sleep(0.5)
    assert _money(stack, t.tenant_id) == money


def _funded_pair(t: Tenant) -> tuple[str, str]:
    return funded(t, "100.00")["wallet_id"], funded(t, "1.00")["wallet_id"]


def test_a_revoked_key_stays_refused_when_valkey_is_rolled_back(stack: Stack) -> None:
    t = make_tenant(stack)
    wallets = _funded_pair(t)
    body = book(*wallets, "1.00")
    created(call(stack, "POST", "/v1/transfers", key=t.key, body=body, idem=body["idempotency_key"]))
    _warm(stack, t.key)
    snapshot = _snapshot(_valkey(stack), key_cache_name(hash_api_key(t.key)), tenant_cache_name(t.tenant_id))
    assert stack.admin_call("revoke_api_key", key_id=t.key_id).status_code == 200
    _refused_after_rollbacks(stack, t, t.key, snapshot, wallets, 401)


def test_a_revoked_access_token_stays_refused_when_valkey_is_rolled_back(stack: Stack) -> None:
    t = make_tenant(stack)
    wallets = _funded_pair(t)
    r = stack.admin_call("issue_access_token", tenant_id=t.tenant_id, mode="sandbox", scopes=list(ALL_SCOPES))
    assert r.status_code == 200, r.text
    token, jti = r.json()["data"]["access_token"], r.json()["data"]["jti"]
    _warm(stack, token)
    snapshot = _snapshot(_valkey(stack), token_cache_name(jti), tenant_cache_name(t.tenant_id))
    assert stack.admin_call("revoke_access_token", jti=jti).status_code == 200
    _refused_after_rollbacks(stack, t, token, snapshot, wallets, 401)


def test_a_disabled_tenant_stays_refused_when_valkey_is_rolled_back(stack: Stack) -> None:
    t = make_tenant(stack)
    wallets = _funded_pair(t)
    _warm(stack, t.key)
    snapshot = _snapshot(_valkey(stack), key_cache_name(hash_api_key(t.key)), tenant_cache_name(t.tenant_id))
    assert stack.admin_call("disable_tenant", tenant_id=t.tenant_id).status_code == 200
    _refused_after_rollbacks(stack, t, t.key, snapshot, wallets, 403)


def test_a_revocation_bites_within_the_bound_while_valkey_is_rolled_back_all_along(stack: Stack) -> None:
    """The attacker rolls the cache back before every request from the moment of revocation:
    no gateway answers the key later than the stated bound after admin's commit."""
    t = make_tenant(stack)
    _warm(stack, t.key)
    valkey = _valkey(stack)
    snapshot = _snapshot(valkey, key_cache_name(hash_api_key(t.key)), tenant_cache_name(t.tenant_id))
    assert stack.admin_call("revoke_api_key", key_id=t.key_id).status_code == 200
    revoked = time.monotonic()
    seen: list[tuple[float, int]] = []
    while time.monotonic() - revoked < BOUND_S + 3:
        _roll_back(valkey, snapshot)
        for gw in (0, 1):
            status = call(stack, "GET", "/v1/customers", key=t.key, gateway=gw).status_code
            seen.append((time.monotonic() - revoked, status))
        time.sleep(0.1)
    answered = [at for at, status in seen if status == 200]
    assert not answered or max(answered) < BOUND_S, seen
    assert {status for at, status in seen if at >= BOUND_S} == {401}
    last = max(answered, default=0.0)
    print(f"revocation bit after {last:.2f} s under continuous rollback ({len(seen)} requests)")

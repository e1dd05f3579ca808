"""OWASP API1 (object-level authorization) and API3 (mass assignment) through the gateway:
another tenant's objects are not found by id, by wallet address or by reference inside a
command, never appear in its lists or list cursors; unknown body fields are refused."""

from __future__ import annotations

import pytest

from tests.conftest import Stack, Tenant, customer_body, make_tenant
from tests.support.gateway import assert_error, call, routed

pytestmark = pytest.mark.inprocess


def _ok(r) -> dict:  # type: ignore[no-untyped-def]
    assert r.status_code in (200, 201), r.text
    return r.json()["data"]


def _objects(t: Tenant) -> dict[str, str]:
    cus = _ok(t.post("/v1/customers", customer_body()))["customer_id"]
    w = _ok(t.post("/v1/wallets", {"customer_id": cus, "symbol": "USDC", "chain": "ETH"}))
    va = _ok(
        t.post(
            "/v1/virtual-accounts",
            {
                "customer_id": cus,
                "currency": "USD",
                "destination": {
                    "rail": "provider_wallet",
                    "currency": "USDC",
                    "address": w["deposit_address"],
                },
            },
        )
    )["virtual_account_id"]
    hook = _ok(t.post("/v1/webhooks", {"endpoint_url": "http://127.0.0.1:9/hook"}))["webhook_id"]
    return {
        "customer": cus,
        "wallet": w["wallet_id"],
        "address": w["deposit_address"],
        "virtual_account": va,
        "webhook": hook,
    }


def test_another_tenants_objects_are_not_found_by_id_address_reference_or_list(stack: Stack) -> None:
    a, b = make_tenant(stack), make_tenant(stack)
    objs = _objects(a)
    mine = _objects(b)
    by_id = {
        "/v1/customers/": objs["customer"],
        "/v1/wallets/": objs["wallet"],
        "/v1/virtual-accounts/": objs["virtual_account"],
        "/v1/webhooks/": objs["webhook"],
    }
    for prefix, oid in by_id.items():
        assert a.get(prefix + oid).status_code == 200  # the owner sees it
        for fn in (call, routed):
            assert_error(fn(stack, "GET", prefix + oid, key=b.key), 404, "not_found")
    # By reference inside a command: B names A's customer, wallet, address, webhook.
    refused = [
        b.post("/v1/wallets", {"customer_id": objs["customer"], "symbol": "USDC", "chain": "ETH"}),
        b.post(
            "/v1/virtual-accounts",
            {
                "customer_id": mine["customer"],
                "currency": "USD",
                "destination": {"rail": "provider_wallet", "currency": "USDC", "address": objs["address"]},
            },
        ),
        b.post(
            "/v1/virtual-accounts",
            {
                "customer_id": mine["customer"],
                "currency": "USD",
                "destination": {
                    "payment_rail": "provider_wallet",
                    "currency": "USDC",
                    "provider_wallet_id": objs["wallet"],
                },
            },
        ),
        b.post("/v1/sandbox/deposits", {"virtual_account_id": objs["virtual_account"], "amount": "5.00"}),
        b.post(f"/v1/webhooks/{objs['webhook']}/rotate-secret", {}),
    ]
    for r in refused:
        assert r.status_code in (400, 404), r.text
        assert objs["customer"] not in r.text or r.status_code == 404
    # Lists hold only B's objects, and A's ids as cursors reveal nothing.
    for path, key in (
        ("/v1/customers", "customer"),
        ("/v1/wallets", "wallet"),
        ("/v1/virtual-accounts", "virtual_account"),
        ("/v1/webhooks", "webhook"),
    ):
        listed = b.get(path + "?limit=100")
        assert listed.status_code == 200, listed.text
        assert objs[key] not in listed.text and mine[key] in listed.text
        cursor = b.get(f"{path}?limit=100&starting_after={objs[key]}")
        assert objs[key] not in cursor.text
        assert cursor.status_code in (200, 404), cursor.text
        if cursor.status_code == 200:
            assert all(objs[k] not in cursor.text for k in objs)


def test_a_sandbox_key_cannot_reach_production_data(stack: Stack, tenant: Tenant) -> None:
    """Mode comes from the credential; asking for the other mode is 403, never other data."""
    cus = _ok(tenant.post("/v1/customers", customer_body()))["customer_id"]
    r = tenant.get(f"/v1/customers/{cus}", **{"x-service-mode": "production"})
    assert assert_error(r, 403, "forbidden")["details"]["reason"] == "mode_mismatch"


@pytest.mark.parametrize(
    ("path", "extra"),
    [
        ("/v1/customers", {"tenant_id": "someone-else"}),
        ("/v1/customers", {"customer_id": "cus_chosen"}),
        ("/v1/wallets", {"available_balance": "1000000"}),
        ("/v1/webhooks", {"signing_secret": "whsec_mine"}),
        ("/v1/webhooks", {"mode": "production"}),
    ],
)
def test_mass_assignment_is_refused_naming_the_field(
    stack: Stack, tenant: Tenant, path: str, extra: dict
) -> None:
    bodies = {
        "/v1/customers": customer_body(),
        "/v1/wallets": {"customer_id": "cus_x", "symbol": "USDC", "chain": "ETH"},
        "/v1/webhooks": {"endpoint_url": "https://example.com/h"},
    }
    field = next(iter(extra))
    assert_error(tenant.post(path, {**bodies[path], **extra}), 400, "invalid_request", field)


def test_one_idempotency_key_on_two_objects_is_a_mismatch_not_a_replay(stack: Stack, tenant: Tenant) -> None:
    """The fingerprint covers the concrete path (docs/failure-model.md, "Idempotency that
    survives a dead gateway"): rotating webhook B with the key
    used for webhook A must not replay A's answer (B would never be rotated)."""
    a = _ok(tenant.post("/v1/webhooks", {"endpoint_url": "http://127.0.0.1:9/a"}))["webhook_id"]
    b = _ok(tenant.post("/v1/webhooks", {"endpoint_url": "http://127.0.0.1:9/b"}))["webhook_id"]
    key = "rotate-" + a
    first = tenant.post(f"/v1/webhooks/{a}/rotate-secret", {}, idem=key)
    assert first.status_code == 200, first.text
    second = tenant.post(f"/v1/webhooks/{b}/rotate-secret", {}, idem=key)
    assert_error(second, 409, "idempotency_replay_mismatch")

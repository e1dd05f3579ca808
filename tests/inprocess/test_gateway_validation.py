"""Every field rule of the API reference (docs/reference/index.md) answers 400 invalid_request
naming the dotted field, in both access forms, and nothing reaches Kafka for it."""

from __future__ import annotations

import copy
import functools
import json
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import Stack, Tenant, customer_body, make_tenant
from tests.support.bodies import BASE, transfer, wallet
from tests.support.gateway import TOPICS, Refused, Tap, assert_error, call, misses_in_both_forms, routed

pytestmark = pytest.mark.inprocess

DROP = object()


def body_with(path: str, changes: dict[str, Any]) -> dict[str, Any]:
    body = copy.deepcopy(BASE[path]())
    for dotted, value in changes.items():
        *parents, last = dotted.split(".")
        node = body
        for p in parents:
            node = node[p]
        if value is DROP:
            node.pop(last, None)
        else:
            node[last] = value
    return body


CASES: list[tuple[str, dict[str, Any], str]] = [
    # customers
    ("/v1/customers", {"account_type": DROP}, "account_type"),
    ("/v1/customers", {"account_type": "company"}, "account_type"),
    ("/v1/customers", {"email": DROP}, "email"),
    ("/v1/customers", {"email": "not-an-email"}, "email"),
    ("/v1/customers", {"email": "a b@example.com"}, "email"),
    ("/v1/customers", {"country_code": "us"}, "country_code"),
    ("/v1/customers", {"country_code": "USA"}, "country_code"),
    ("/v1/customers", {"country_code": DROP}, "country_code"),
    ("/v1/customers", {"service_user_id": DROP}, "service_user_id"),
    ("/v1/customers", {"service_user_id": ""}, "service_user_id"),
    ("/v1/customers", {"full_name": DROP}, "full_name"),
    ("/v1/customers", {"account_type": "business"}, "company_name"),
    ("/v1/customers", {"phone_e164": "555-1234"}, "phone_e164"),
    ("/v1/customers", {"phone_e164": "+0123"}, "phone_e164"),
    ("/v1/customers", {"email": 42}, "email"),
    ("/v1/customers", {"nickname": "x"}, "nickname"),
    # wallets
    ("/v1/wallets", {"customer_id": DROP}, "customer_id"),
    ("/v1/wallets", {"symbol": "DAI"}, "symbol"),
    ("/v1/wallets", {"chain": "DOGE"}, "chain"),
    ("/v1/wallets", {"symbol": "usdc", "chain": "tron"}, "chain"),
    ("/v1/wallets", {"symbol": "EURC", "chain": "BSC"}, "chain"),
    ("/v1/wallets", {"symbol": "PYUSD", "chain": "BASE"}, "chain"),
    ("/v1/wallets", {"customer_id": "cus/../x"}, "customer_id"),
    # virtual accounts
    ("/v1/virtual-accounts", {"currency": "JPY"}, "currency"),
    ("/v1/virtual-accounts", {"destination": DROP}, "destination"),
    ("/v1/virtual-accounts", {"destination.rail": DROP}, "destination.rail"),
    ("/v1/virtual-accounts", {"destination.rail": "ach"}, "destination.rail"),
    ("/v1/virtual-accounts", {"destination.address": DROP}, "destination.address"),
    ("/v1/virtual-accounts", {"destination.currency": DROP}, "destination.currency"),
    ("/v1/virtual-accounts", {"destination.currency": "EURC"}, "destination.currency"),
    ("/v1/virtual-accounts", {"currency": "GBP"}, "destination.currency"),
    ("/v1/virtual-accounts", {"destination.extra": 1}, "destination.extra"),
    (
        "/v1/virtual-accounts",
        {
            "destination.rail": DROP,
            "destination.payment_rail": "provider_wallet",
            "destination.address": DROP,
        },
        "destination.provider_wallet_id",
    ),
    # transfers
    ("/v1/transfers", {"source": DROP}, "source"),
    ("/v1/transfers", {"destination": DROP}, "destination"),
    ("/v1/transfers", {"idempotency_key": DROP}, "idempotency_key"),
    ("/v1/transfers", {"source.amount": DROP}, "source.amount"),
    ("/v1/transfers", {"source.amount": "0"}, "source.amount"),
    ("/v1/transfers", {"source.amount": "-1"}, "source.amount"),
    ("/v1/transfers", {"source.amount": "1.1234567"}, "source.amount"),
    ("/v1/transfers", {"source.amount": "1000000000000.01"}, "source.amount"),
    ("/v1/transfers", {"source.amount": "1e3"}, "source.amount"),
    ("/v1/transfers", {"source.amount": 10}, "source.amount"),
    ("/v1/transfers", {"source.amount": "NaN"}, "source.amount"),
    ("/v1/transfers", {"source.payment_rail": "swift"}, "source.payment_rail"),
    ("/v1/transfers", {"source.payment_rail": "ach", "source.currency": "USD"}, "source.payment_rail"),
    ("/v1/transfers", {"source.currency": "PYUSD", "destination.currency": "PYUSD"}, "source.currency"),
    ("/v1/transfers", {"destination.currency": "USDT"}, "destination.currency"),
    ("/v1/transfers", {"source.provider_wallet_id": DROP}, "source.provider_wallet_id"),
    ("/v1/transfers", {"source.payment_rail": "stablecoin"}, "source.chain"),
    ("/v1/transfers", {"source.payment_rail": "stablecoin", "source.chain": "tron"}, "source.chain"),
    (
        "/v1/transfers",
        {"destination.payment_rail": "stablecoin", "destination.chain": "eth"},
        "destination.address",
    ),
    ("/v1/transfers", {"developer_fee": {"percentage": 101}}, "developer_fee.percentage"),
    ("/v1/transfers", {"developer_fee": {"percentage": "1.55555"}}, "developer_fee.percentage"),
    ("/v1/transfers", {"developer_fee": {"percentage": 1.55555}}, "developer_fee.percentage"),
    ("/v1/transfers", {"developer_fee": {"percentage": "100.0001"}}, "developer_fee.percentage"),
    ("/v1/transfers", {"developer_fee": {"percentage": -0.5}}, "developer_fee.percentage"),
    ("/v1/transfers", {"developer_fee": {"percentage": "1e1"}}, "developer_fee.percentage"),
    ("/v1/transfers", {"developer_fee": {"percentage": True}}, "developer_fee.percentage"),
    ("/v1/transfers", {"developer_fee": {"flat_amount": "0.0000001"}}, "developer_fee.flat_amount"),
    ("/v1/transfers", {"source.bank_account": {"iban": "nope"}}, "source.bank_account.iban"),
    # payouts
    ("/v1/payouts", {"source.payment_rail": "stablecoin", "source.chain": "ETH"}, "source.payment_rail"),
    ("/v1/payouts", {"destination.payment_rail": "provider_wallet"}, "destination.payment_rail"),
    ("/v1/payouts", {"destination.currency": "EUR"}, "destination.currency"),
    ("/v1/payouts", {"destination.payment_rail": "sepa"}, "destination.currency"),
    (
        "/v1/payouts",
        {"destination.payment_rail": "faster_payments", "destination.currency": "EUR"},
        "destination.currency",
    ),
    ("/v1/payouts", {"destination.external_account_id": DROP}, "destination.external_account_id"),
    ("/v1/payouts", {"source.amount": "12.3456789"}, "source.amount"),
    # webhooks
    ("/v1/webhooks", {"endpoint_url": "not a url"}, "endpoint_url"),
    ("/v1/webhooks", {"endpoint_url": "ftp://example.com/x"}, "endpoint_url"),
    ("/v1/webhooks", {"endpoint_url": DROP}, "endpoint_url"),
    # sandbox deposits
    ("/v1/sandbox/deposits", {"amount": "1.001"}, "amount"),
    ("/v1/sandbox/deposits", {"amount": "0.00"}, "amount"),
    ("/v1/sandbox/deposits", {"virtual_account_id": DROP}, "virtual_account_id"),
]


@pytest.fixture(scope="module")
def vt(stack: Stack) -> Tenant:
    return make_tenant(stack, rate_limit=100000)


@pytest.fixture(scope="module")
def taps(stack: Stack) -> Iterator[list[Tap]]:
    taps = [Tap(stack, TOPICS.compliance_commands), Tap(stack, TOPICS.webhooks_commands)]
    yield taps
    for t in taps:
        t.close()


def _idem(body: Any) -> str:  # the body's key when it has a usable one
    k = body.get("idempotency_key") if isinstance(body, dict) else None
    return k if isinstance(k, str) else uuid.uuid4().hex


def _refused(path: str, changes: dict[str, Any], field: str) -> Refused:
    body = body_with(path, changes)
    return Refused(path, json.dumps(body), field, f"{path} {changes}", functools.partial(_idem, body))


def test_every_field_rule_in_both_forms(stack: Stack, vt: Tenant) -> None:
    """All CASES, direct and routed, concurrently; every miss is reported at once."""
    misses = misses_in_both_forms(stack, vt.key, [_refused(*case) for case in CASES], concurrency=6)
    assert not misses, "\n".join(misses)


def test_valid_bodies_pass_validation_and_are_normalised(stack: Stack, vt: Tenant, taps: list[Tap]) -> None:
    """The base bodies are valid: the command reaches Kafka with codes uppercased."""
    from common.contracts.commands import CreateTransfer, CreateVirtualAccount, CreateWallet

    rid = "req-valid-" + uuid.uuid4().hex
    r = vt.post("/v1/wallets", wallet(), **{"X-Request-Id": rid})
    assert r.headers["x-request-id"] == rid
    (cmd,) = taps[0].find(rid)
    assert isinstance(cmd, CreateWallet)
    assert (cmd.symbol, cmd.chain, cmd.customer_id) == ("USDC", "ETH", "cus_1")
    assert cmd.wallet_id.startswith("wal_") and cmd.ctx.tenant_id == vt.tenant_id

    rid = "req-valid-" + uuid.uuid4().hex
    body = body_with(
        "/v1/virtual-accounts",
        {"destination": {"payment_rail": "stablecoin", "currency": "usdt", "provider_wallet_id": "wal_9"}},
    )
    vt.post("/v1/virtual-accounts", body, **{"X-Request-Id": rid})
    (cmd,) = taps[0].find(rid)
    assert isinstance(cmd, CreateVirtualAccount)
    assert cmd.currency == "USD" and cmd.virtual_account_id.startswith("va_")
    assert (cmd.destination.rail, cmd.destination.currency, cmd.destination.provider_wallet_id) == (
        "stablecoin",
        "USDT",
        "wal_9",
    )

    for path, kind, prefix in (("/v1/transfers", "transfer", "tr_"), ("/v1/payouts", "payout", "po_")):
        rid = "req-valid-" + uuid.uuid4().hex
        body = BASE[path]()
        body["idempotency_key"] = key = "k-" + uuid.uuid4().hex
        body["developer_fee"] = {"percentage": 1.25, "flat_amount": "0.5"}
        call(stack, "POST", path, key=vt.key, body=body, idem=key, headers={"X-Request-Id": rid})
        (cmd,) = taps[0].find(rid)
        assert isinstance(cmd, CreateTransfer)
        assert cmd.kind == kind and cmd.transfer_id.startswith(prefix)
        assert (cmd.amount, cmd.currency, cmd.idempotency_key) == ("10.5", "USDC", key)
        assert cmd.source.currency == "USDC" and cmd.destination.currency in ("USDC", "USD")
        assert cmd.developer_fee is not None and cmd.developer_fee.percentage == "1.25"


def test_invalid_requests_publish_nothing(stack: Stack, vt: Tenant, taps: list[Tap]) -> None:
    rid = "req-bad-" + uuid.uuid4().hex
    for path, changes, _ in CASES[::7]:
        body = body_with(path, changes)
        r = call(stack, "POST", path, key=vt.key, body=body, idem=_idem(body), headers={"X-Request-Id": rid})
        assert r.status_code == 400
    assert taps[0].find(rid, timeout=1.5) == []
    assert taps[1].find(rid, timeout=0.5) == []
    # Positive control: the same taps, read the same way, do see a valid request's command on
    # each topic, so the empty finds above are the gateway's doing, not a tap that reads nothing.
    for tap, path in ((taps[0], "/v1/customers"), (taps[1], "/v1/webhooks")):
        ok = "req-control-" + uuid.uuid4().hex
        body = BASE[path]()
        if path == "/v1/webhooks":  # a host that resolves (the test stack allows private targets)
            body["endpoint_url"] = "http://127.0.0.1:9/hook"
        r = call(stack, "POST", path, key=vt.key, body=body, idem=_idem(body), headers={"X-Request-Id": ok})
        assert r.status_code in (200, 201), r.text
        assert len(tap.find(ok)) == 1, (path, ok)


@pytest.mark.parametrize("form", ["direct", "routed"])
def test_transport_errors(stack: Stack, vt: Tenant, form: str) -> None:
    fn = routed if form == "routed" else call
    idem = uuid.uuid4().hex
    assert_error(
        fn(stack, "POST", "/v1/customers", key=vt.key, raw=b'{"account_type": ', idem=idem),
        400,
        "invalid_request",
        "body",
    )
    assert_error(
        fn(stack, "POST", "/v1/customers", key=vt.key, raw=b"[" * 5000 + b"]" * 5000, idem=idem),
        400,
        "invalid_request",
    )
    assert_error(
        fn(stack, "POST", "/v1/customers", key=vt.key, raw=b"[1, 2]", idem=idem),
        400,
        "invalid_request",
        "body",
    )
    big = b'{"x": "' + b"a" * 70000 + b'"}'
    assert_error(fn(stack, "POST", "/v1/customers", key=vt.key, raw=big, idem=idem), 413, "invalid_request")
    assert_error(
        fn(
            stack,
            "POST",
            "/v1/customers",
            key=vt.key,
            raw=b"{}",
            idem=idem,
            headers={"Content-Type": "text/plain"},
        ),
        415,
        "invalid_request",
    )
    assert_error(fn(stack, "POST", "/v1/nowhere", key=vt.key, body={}, idem=idem), 404, "not_found")
    assert_error(
        fn(stack, "PUT" if form == "direct" else "POST", "/v1/health", key=vt.key, body={}, idem=idem),
        405,
        "invalid_request",
    )


def test_routed_form_specifics(stack: Stack, vt: Tenant) -> None:
    h = {"Idempotency-Key": uuid.uuid4().hex}
    # x-service-route missing: 400 naming it (the document marks it required), after the credential.
    r = call(stack, "POST", "/", key=vt.key, body={}, headers=h)
    assert_error(r, 400, "invalid_request", "x-service-route")
    r = call(
        stack,
        "POST",
        "/",
        key=vt.key,
        body={"method": "TRACE"},  # DELETE and PATCH are routed methods now
        headers={**h, "x-service-route": "/v1/health"},
    )
    assert_error(r, 400, "invalid_request", "method")
    r = call(
        stack,
        "POST",
        "/",
        key=vt.key,
        body={"method": "GET", "limit": 5},
        headers={"x-service-route": "/v1/customers"},
    )
    assert_error(r, 400, "invalid_request", "limit")
    r = call(
        stack, "POST", "/", key=vt.key, body={"method": "get"}, headers={"x-service-route": "/v1/health"}
    )
    assert r.status_code == 200 and r.json()["data"]["route"] == "GET /v1/health"


@pytest.mark.parametrize(
    "query,field",
    [
        ("limit=0", "limit"),
        ("limit=101", "limit"),
        ("limit=abc", "limit"),
        ("bogus=1", "bogus"),
        ("starting_after=a%2Fb", "starting_after"),
    ],
)
def test_list_query_rules(stack: Stack, vt: Tenant, query: str, field: str) -> None:
    for fn in (call, routed):
        r = fn(stack, "GET", f"/v1/customers?{query}", key=vt.key)
        assert_error(r, 400, "invalid_request", field)


def test_idempotency_key_rules(stack: Stack, vt: Tenant) -> None:
    r = call(stack, "POST", "/v1/customers", key=vt.key, body=customer_body())
    assert_error(r, 400, "idempotency_key_required")
    for bad in (b"short", b"x" * 257, "bad\u00e9key-1234".encode("latin-1"), b"tab\tkey-1234"):
        r = httpx.post(
            stack.gateway + "/v1/customers",
            json=customer_body(),
            headers={**vt.headers(), "Idempotency-Key": bad},
        )  # type: ignore[dict-item]
        assert r.status_code == 400 and r.json()["error"]["details"]["field"] == "Idempotency-Key"
    body = transfer()
    r = call(stack, "POST", "/v1/transfers", key=vt.key, body=body, idem="another-key-123")
    assert_error(r, 400, "invalid_request", "idempotency_key")

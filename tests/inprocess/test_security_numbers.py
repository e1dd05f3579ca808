"""Numbers (docs/security.md, "OWASP API Security Top 10", API4): every number anywhere in a
request (gateway and admin, both access forms) is a decimal string or a JSON number with at
most 18 significant digits and exponent within +-18; exponent bombs, NaN, Infinity and huge
integers are 400 naming the field, and nothing stored or echoed can outgrow its input (the
developer fee percentage case)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import httpx
import pytest

from common.errors import ServiceError
from common.validation import bounded_decimal, check_numbers, decode_body, number_problem
from tests.conftest import ADMIN_TOKEN, Stack, Tenant, make_tenant
from tests.support.bodies import BASE
from tests.support.flows import book, created, funded
from tests.support.gateway import Refused, assert_error, fetchval, misses_in_both_forms

BOMBS = [
    "1e-999999",
    "1e999999",
    "-1E+400",
    "NaN",
    "Infinity",
    "-Infinity",
    "123456789012345678901234567890",
    "9" * 5000,
    "0e-999999",
    "1.0000000000000000000000001",
]
MARK = "__bomb__"


def _leaves(node: Any, path: str = "") -> Iterator[str]:
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _leaves(v, f"{path}.{k}" if path else k)
    else:
        yield path


def _with_bomb(body: dict[str, Any], dotted: str, bomb: str) -> bytes:
    node = json.loads(json.dumps(body))
    *parents, last = dotted.split(".")
    cur = node
    for p in parents:
        cur = cur.setdefault(p, {})
    cur[last] = MARK
    return json.dumps(node).replace(f'"{MARK}"', bomb).encode()


def _gateway_cases() -> list[tuple[str, str]]:
    cases = []
    for path, make in BASE.items():
        body = make()
        if path in ("/v1/transfers", "/v1/payouts"):
            body["developer_fee"] = {"percentage": "1", "flat_amount": "0.5"}
        cases += [(path, leaf) for leaf in _leaves(body)]
        cases.append((path, "an_unknown_field"))
    cases.append(("/v1/webhooks/we_x/rotate-secret", "anything"))
    cases.append(("/v1/onboarding-authorizations", "anything"))
    return cases


@pytest.mark.unit
@pytest.mark.parametrize("bomb", [b for b in BOMBS if b not in ("NaN", "Infinity", "-Infinity", "9" * 5000)])
def test_check_numbers_names_the_field(bomb: str) -> None:
    from common.validation import _numbers

    with pytest.raises(ServiceError) as err:
        check_numbers(_numbers.decode(_with_bomb({"a": {"b": [1]}}, "a.c", bomb)))
    assert err.value.details["field"] == "a.c"


@pytest.mark.unit
@pytest.mark.parametrize("bomb", BOMBS)
def test_admin_decode_body_names_the_field(bomb: str) -> None:
    import msgspec

    class Body(msgspec.Struct):
        limit: int = 1

    with pytest.raises(ServiceError) as err:
        decode_body(_with_bomb({"limit": 1}, "limit", bomb), Body)
    assert err.value.details["field"] == "limit", err.value.message


@pytest.mark.unit
def test_bounds_and_percentages() -> None:
    ok = [Decimal("0.000000000000000001"), Decimal("1e18"), 10**17, Decimal("123456789.123456789")]
    assert all(number_problem(v) is None for v in ok)
    args = {"places": 4, "low": Decimal(0), "high": Decimal(100)}
    assert bounded_decimal("p", "12.5000", **args) == "12.5"
    assert bounded_decimal("p", Decimal("1E+2"), **args) == "100"
    assert bounded_decimal("p", 0, **args) == "0"
    for bad in ("1e-999999", "NaN", "Infinity", "100.00001", "-1", "0.00001", "abc", None, True, [1]):
        with pytest.raises(ServiceError) as err:
            bounded_decimal("p", bad, **args)
        assert err.value.details["field"] == "p"


@pytest.fixture(scope="module")
def bt(stack: Stack) -> Tenant:
    return make_tenant(stack, rate_limit=1_000_000)


@pytest.mark.inprocess
def test_bombs_on_every_field_of_every_endpoint_in_both_forms(stack: Stack, bt: Tenant) -> None:
    cases = _gateway_cases()
    assert len(cases) > 40
    refused = [
        Refused(p, _with_bomb(BASE[p]() if p in BASE else {}, f, b), f, f"{p} {f}={b[:20]}")
        for p, f in cases
        for b in BOMBS
    ]
    misses = misses_in_both_forms(stack, bt.key, refused, concurrency=8, max_bytes=2000)
    assert not misses, "\n".join(misses[:40])


@pytest.mark.inprocess
def test_query_numbers_are_bounded(stack: Stack, bt: Tenant) -> None:
    for q in ("1e-999999", "NaN", "Infinity", "9" * 5000, "-1e999999"):
        r = bt.get(f"/v1/customers?limit={q}")
        assert_error(r, 400, "invalid_request", "limit")


ADMIN_FIELDS = [
    ("upsert_tenant", {"tenant_name": "bomb-tenant"}, "rate_limit_per_minute"),
    ("issue_access_token", {"tenant_id": "x", "mode": "sandbox", "scopes": []}, "ttl_seconds"),
    ("list_tenants", {}, "limit"),
    ("list_audit_log", {}, "limit"),
    ("list_deliveries", {}, "limit"),
    ("set_transfer_cap", {"tenant_id": "x", "mode": "sandbox", "daily": "5"}, "per_transfer"),
    ("create_api_key", {"tenant_id": "x", "key_label": "k", "scopes": []}, "anything"),
]


@pytest.mark.inprocess
def test_admin_bombs_are_400_naming_the_field(stack: Stack) -> None:
    misses = []
    with httpx.Client(timeout=30) as client:
        for action, base, field in ADMIN_FIELDS:
            for bomb in BOMBS:
                body = _with_bomb({"action": action, **base}, field, bomb)
                r = client.post(
                    stack.admin + "/",
                    content=body,
                    headers={"Authorization": f"Bearer {ADMIN_TOKEN}", "Content-Type": "application/json"},
                )
                try:
                    assert_error(r, 400, "invalid_request", field)
                except AssertionError as exc:
                    misses.append(f"{action} {field}={bomb[:20]} -> {exc}")
    assert not misses, "\n".join(misses[:40])


@pytest.fixture(scope="module")
def pair(bt: Tenant) -> tuple[str, str]:
    """Two wallets of ``bt``, the first funded for every transfer below."""
    return funded(bt, "100.00")["wallet_id"], funded(bt, "1.00")["wallet_id"]


@pytest.mark.inprocess
# (100 % is a valid percentage but makes the fee equal to the amount: refused on developer_fee,
# see test_ledger_fees_statements.py)
@pytest.mark.parametrize(
    ("given", "stored"), [("12.5000", "12.5"), ("0", "0"), ("99.9990", "99.999"), ("0.0001", "0.0001")]
)
def test_percentages_as_strings_or_numbers_are_stored_plain(
    stack: Stack, bt: Tenant, pair: tuple[str, str], given: str, stored: str
) -> None:
    """The ledger's transfer row keeps the fee as the plain decimal, never longer than given.
    (Read from the database rather than from the command topic: a tap on a long topic read
    nothing for 45 s under the full suite.)"""
    for raw in (json.dumps(given), given):  # a decimal string, then the same as a JSON number
        body = book(*pair, "1.00")
        body["developer_fee"] = {"percentage": MARK}
        content = json.dumps(body).replace(f'"{MARK}"', raw)
        r = httpx.post(
            stack.gateway + "/v1/transfers",
            content=content,
            headers={
                "Authorization": f"Bearer {bt.key}",
                "Content-Type": "application/json",
                "Idempotency-Key": body["idempotency_key"],
            },
            timeout=30,
        )
        tr = created(r)
        kept = fetchval(stack, "SELECT developer_fee FROM ledger.transfers WHERE id = $1", tr["transfer_id"])
        assert kept == {"percentage": stored}, (raw, kept)

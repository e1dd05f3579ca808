"""Developer fees (docs/guides/money.md) through gateway -> compliance -> ledger: charged on
completion into the tenant's fee balance, shown on the transfer, refused when malformed."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from tests.conftest import Stack, Tenant, make_tenant
from tests.support.flows import book, created, funded, send

pytestmark = [pytest.mark.inprocess, pytest.mark.timeout(900)]  # the first test may start the stack


def _available(t: Tenant, wallet_id: str) -> Decimal:
    return Decimal(t.get(f"/v1/wallets/{wallet_id}").json()["data"]["available_balance"])


def _fees(t: Tenant) -> dict[str, Decimal]:
    r = t.get("/v1/fee-balances")
    assert r.status_code == 200, r.text
    return {i["currency"]: Decimal(i["available_balance"]) for i in r.json()["data"]["items"]}


def _with_fee(src: str, dst: str, amount: str, fee: dict[str, Any]) -> dict[str, Any]:
    return {**book(src, dst, amount), "developer_fee": fee}


def test_a_percentage_fee_is_charged_into_the_fee_balance(stack: Stack) -> None:
    t = make_tenant(stack, rate_limit=10000)
    a, b = funded(t, "100.00"), funded(t, "1.00")
    assert _fees(t) == {}
    tr = created(
        send(t, "/v1/transfers", _with_fee(a["wallet_id"], b["wallet_id"], "50", {"percentage": 1.5}))
    )
    assert tr["state"] == "completed", tr
    shown = t.get(f"/v1/transfers/{tr['transfer_id']}").json()["data"]
    assert shown["developer_fee_amount"] == "0.75" and shown["amount"] == "50.00", shown
    assert _available(t, a["wallet_id"]) == Decimal("50")  # the source pays the amount
    assert _available(t, b["wallet_id"]) == Decimal("1") + Decimal("49.25")  # amount - fee
    assert _fees(t) == {"USDC": Decimal("0.75")}

    # flat + percentage, rounded down to the currency's places: 0.10 + 10.000001 * 3.3333 % .
    body = _with_fee(
        a["wallet_id"], b["wallet_id"], "10.000001", {"flat_amount": "0.10", "percentage": "3.3333"}
    )
    tr2 = created(send(t, "/v1/transfers", body))
    fee = Decimal("0.433330")  # 0.1 + 0.33333003333... -> 0.433330
    got = t.get(f"/v1/transfers/{tr2['transfer_id']}").json()["data"]
    assert Decimal(got["developer_fee_amount"]) == fee, got
    assert _available(t, b["wallet_id"]) == Decimal("50.25") + Decimal("10.000001") - fee
    assert _fees(t) == {"USDC": Decimal("0.75") + fee}
    assert _fees(make_tenant(stack)) == {}  # another tenant earned nothing


def test_malformed_fees_are_refused_and_change_nothing(stack: Stack) -> None:
    t = make_tenant(stack, rate_limit=10000)
    a, b = funded(t, "100.00"), funded(t, "1.00")
    cases = [
        ({"percentage": 101}, "developer_fee.percentage"),
        ({"percentage": "1.23456"}, "developer_fee.percentage"),
        ({"percentage": -1}, "developer_fee.percentage"),
        ({"flat_amount": "50"}, "developer_fee"),  # the fee must be below the amount
        ({"flat_amount": "10", "percentage": 80}, "developer_fee"),
        ({"flat_amount": "0.0000001"}, "developer_fee.flat_amount"),
    ]
    for fee, field in cases:
        r = send(t, "/v1/transfers", _with_fee(a["wallet_id"], b["wallet_id"], "50", fee))
        assert r.status_code == 400, (fee, r.text)
        assert r.json()["error"]["details"]["field"] == field, (fee, r.text)
    assert _available(t, a["wallet_id"]) == Decimal("100")
    assert _available(t, b["wallet_id"]) == Decimal("1")
    assert _fees(t) == {}


def _statement(t: Tenant, wallet_id: str) -> list[dict[str, Any]]:
    """Every line of the wallet's statement, page by page (one line per page)."""
    items, cursor = [], None
    while True:
        q = f"?limit=1&starting_after={cursor}" if cursor else "?limit=1"
        r = t.get(f"/v1/wallets/{wallet_id}/transactions{q}")
        assert r.status_code == 200, r.text
        items += r.json()["data"]["items"]
        cursor = r.json()["data"]["next_cursor"]
        if cursor is None:
            return items


def test_a_wallet_statement_reconciles_with_its_balance(stack: Stack) -> None:
    t = make_tenant(stack, rate_limit=10000)
    a, b = funded(t, "100.00"), funded(t, "1.00")
    created(send(t, "/v1/transfers", _with_fee(a["wallet_id"], b["wallet_id"], "30", {"percentage": 1.5})))
    created(send(t, "/v1/transfers", book(b["wallet_id"], a["wallet_id"], "5.25")))
    for w in (a, b):
        lines = _statement(t, w["wallet_id"])
        available = _available(t, w["wallet_id"])
        assert Decimal(lines[0]["balance_after"]) == available, lines  # newest first
        signed = [Decimal(x["amount"]) * (1 if x["direction"] == "credit" else -1) for x in lines]
        assert sum(signed) == available
        running = Decimal(0)
        for line, amount in zip(reversed(lines), reversed(signed), strict=True):
            running += amount
            assert Decimal(line["balance_after"]) == running, line
        assert lines[-1]["kind"] == "deposit" and lines[-1]["deposit_id"], lines
    a_lines = _statement(t, a["wallet_id"])
    assert [(x["kind"], x["direction"], x["amount"]) for x in a_lines] == [
        ("transfer", "credit", "5.25"),
        ("transfer", "debit", "30.00"),
        ("deposit", "credit", "100.00"),
    ]
    b_credit = _statement(t, b["wallet_id"])[1]
    assert (b_credit["direction"], b_credit["amount"]) == ("credit", "29.55"), b_credit  # 30 - 0.45 fee
    assert b_credit["transfer_id"]
    other = make_tenant(stack)
    assert other.get(f"/v1/wallets/{a['wallet_id']}/transactions").status_code == 404

"""Reconciliation in one action (contract 13.4): ok on real money flows, and every kind of
tampering by SQL is named (the wallet, the entry, the transfer), never fixed."""

from __future__ import annotations

import uuid
from decimal import Decimal

import pytest

from tests.conftest import Stack, make_tenant
from tests.support.admin import admin_error, admin_ok, db
from tests.support.flows import book, created, funded, send

pytestmark = pytest.mark.integration


def _reconcile(stack: Stack, tenant_id: str) -> dict:
    return admin_ok(stack, "reconcile", tenant_id=tenant_id, mode="sandbox")


def test_reconcile_is_ok_then_names_each_tampered_row(stack: Stack) -> None:
    t = make_tenant(stack)
    a, b = funded(t, "100.00"), funded(t, "50.00")
    body = book(a["wallet_id"], b["wallet_id"], "30.00")
    body["developer_fee"] = {"flat_amount": "1.50"}
    transfer = created(send(t, "/v1/transfers", body))
    assert transfer["state"] == "completed"
    ok = _reconcile(stack, t.tenant_id)
    assert ok["ok"] is True and ok["discrepancies"] == [], ok
    [usdc] = ok["currencies"]
    assert usdc["currency"] == "USDC" and Decimal(usdc["difference"]) == 0
    assert Decimal(usdc["journal_total"]) == Decimal("150.00")
    assert (Decimal(usdc["balances_total"]), Decimal(usdc["fee_total"])) == (
        Decimal("148.50"),
        Decimal("1.50"),
    )
    assert Decimal(usdc["holds_total"]) == 0

    account = a["wallet_id"] + ".available"
    db(stack, "UPDATE ledger.accounts SET balance = balance + 7 WHERE id = $1", account)
    try:
        bad = _reconcile(stack, t.tenant_id)
    finally:
        db(stack, "UPDATE ledger.accounts SET balance = balance - 7 WHERE id = $1", account)
    assert bad["ok"] is False
    found = {d["check"]: d for d in bad["discrepancies"]}
    assert set(found) == {"currency_totals", "balance_equals_postings"}, bad
    assert found["balance_equals_postings"]["wallet_id"] == a["wallet_id"]
    assert Decimal(found["balance_equals_postings"]["balance"]) == Decimal("77.00")
    assert Decimal(found["currency_totals"]["difference"]) == Decimal("-7.00")

    [posting] = db(
        stack,
        "SELECT p.id, p.entry_id FROM ledger.postings p JOIN ledger.journal_entries e ON e.id = p.entry_id"
        " WHERE e.transfer_id = $1 AND p.account_id = $2",
        transfer["transfer_id"],
        b["wallet_id"] + ".available",
    )
    # postings are append-only (a trigger refuses UPDATE): only someone who can switch the
    # trigger off can change one, which is what reconcile must then catch
    db(stack, "ALTER TABLE ledger.postings DISABLE TRIGGER USER")
    try:
        db(stack, "UPDATE ledger.postings SET amount = amount + 1 WHERE id = $1", posting["id"])
        try:
            bad = _reconcile(stack, t.tenant_id)
        finally:
            db(stack, "UPDATE ledger.postings SET amount = amount - 1 WHERE id = $1", posting["id"])
    finally:
        db(stack, "ALTER TABLE ledger.postings ENABLE TRIGGER USER")
    found = {d["check"]: d for d in bad["discrepancies"]}
    assert found["entry_balances"]["entry_id"] == posting["entry_id"], bad
    assert found["balance_equals_postings"]["wallet_id"] == b["wallet_id"], bad

    db(stack, "UPDATE ledger.transfers SET state = 'failed' WHERE id = $1", transfer["transfer_id"])
    try:
        bad = _reconcile(stack, t.tenant_id)
    finally:
        db(stack, "UPDATE ledger.transfers SET state = 'completed' WHERE id = $1", transfer["transfer_id"])
    [d] = bad["discrepancies"]
    assert (d["check"], d["transfer_id"], d["state"]) == (
        "transfer_matches_state",
        transfer["transfer_id"],
        "failed",
    )
    assert _reconcile(stack, t.tenant_id)["ok"] is True


def test_reconcile_names_its_tenant(stack: Stack) -> None:
    err = admin_error(stack, "reconcile", 400, mode="sandbox")
    assert err["details"]["field"] == "tenant_id"
    assert (
        admin_error(stack, "reconcile", 404, tenant_id=str(uuid.uuid4()), mode="sandbox")["code"]
        == "not_found"
    )

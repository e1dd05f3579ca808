"""Reconciliation in one action (docs/operations/backups.md, "How to check a restore"): ok on
real money flows, and every kind of tampering by SQL is named (the wallet, the entry, the
transfer), never fixed."""

from __future__ import annotations

import uuid
from decimal import Decimal

import pytest

from tests.conftest import Stack, make_tenant
from tests.support.admin import admin_error, admin_ok, db, tampered
from tests.support.flows import book, created, funded, send

pytestmark = pytest.mark.inprocess


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
    with tampered(
        stack,
        [("UPDATE ledger.accounts SET balance = balance + 7 WHERE id = $1", account)],
        [("UPDATE ledger.accounts SET balance = balance - 7 WHERE id = $1", account)],
    ):
        bad = _reconcile(stack, t.tenant_id)
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
    with tampered(
        stack,
        [("UPDATE ledger.postings SET amount = amount + 1 WHERE id = $1", posting["id"])],
        [("UPDATE ledger.postings SET amount = amount - 1 WHERE id = $1", posting["id"])],
        triggers_off=["ledger.postings"],
    ):
        bad = _reconcile(stack, t.tenant_id)
    found = {d["check"]: d for d in bad["discrepancies"]}
    assert found["entry_balances"]["entry_id"] == posting["entry_id"], bad
    assert found["balance_equals_postings"]["wallet_id"] == b["wallet_id"], bad

    state = "UPDATE ledger.transfers SET state = $2 WHERE id = $1"
    with tampered(
        stack, [(state, transfer["transfer_id"], "failed")], [(state, transfer["transfer_id"], "completed")]
    ):
        bad = _reconcile(stack, t.tenant_id)
    found = {d["check"]: d for d in bad["discrepancies"]}
    assert set(found) == {"transfer_matches_state", "transfer_history"}, bad
    assert (found["transfer_matches_state"]["transfer_id"], found["transfer_matches_state"]["state"]) == (
        transfer["transfer_id"],
        "failed",
    )
    # the state was changed without its recorded change (and so without its event)
    assert found["transfer_history"]["last_recorded_state"] == "completed"

    # a recorded change lost: the path from pending no longer holds (its event may be missing)
    [step] = db(
        stack,
        "SELECT id, transfer_id, from_state, to_state, cause, request_id, at FROM ledger.state_changes"
        " WHERE transfer_id = $1 AND to_state = 'processing'",
        transfer["transfer_id"],
    )
    restore = (
        "INSERT INTO ledger.state_changes (id, transfer_id, from_state, to_state, cause,"
        " request_id, at) VALUES ($1, $2, $3, $4, $5, $6, $7)"
    )
    with tampered(
        stack,
        [("DELETE FROM ledger.state_changes WHERE id = $1", step["id"])],
        [(restore, *step.values())],
        triggers_off=["ledger.state_changes"],
    ):
        bad = _reconcile(stack, t.tenant_id)
    [d] = bad["discrepancies"]
    assert (d["check"], d["transfer_id"], d["changes_out_of_sequence"]) == (
        "transfer_history",
        transfer["transfer_id"],
        1,
    ), bad
    assert _reconcile(stack, t.tenant_id)["ok"] is True


def test_reconcile_names_its_tenant(stack: Stack) -> None:
    err = admin_error(stack, "reconcile", 400, mode="sandbox")
    assert err["details"]["field"] == "tenant_id"
    assert (
        admin_error(stack, "reconcile", 404, tenant_id=str(uuid.uuid4()), mode="sandbox")["code"]
        == "not_found"
    )

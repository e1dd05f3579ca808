"""The tamper-evident journal (docs/security.md, "Threat model"): verify_journal is ok on real
money flows, and names the entry when a posting's amount is changed, a hash rewritten or an
entry deleted by SQL; the standalone script in docs/ agrees with it on the same export."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import Stack, make_tenant
from tests.support.admin import admin_ok, db, tampered
from tests.support.flows import book, created, funded, send
from tests.support.journal import JOURNAL, _export, _json, _script

pytestmark = pytest.mark.inprocess


def _verify(stack: Stack, tenant_id: str | None = None) -> dict:
    narrow = {"tenant_id": tenant_id, "mode": "sandbox"} if tenant_id else {}
    return admin_ok(stack, "verify_journal", **narrow)


def test_the_chain_verifies_and_names_each_tampered_entry(stack: Stack, tmp_path: Path) -> None:
    t = make_tenant(stack)
    a, b = funded(t, "100.00"), funded(t, "40.00")
    for amount in ("10.00", "2.50", "0.02"):
        body = book(a["wallet_id"], b["wallet_id"], amount)
        body["developer_fee"] = {"flat_amount": "0.01"}
        assert created(send(t, "/v1/transfers", body))["state"] == "completed"
    [count] = db(stack, "SELECT count(*) AS n FROM ledger.journal_entries WHERE tenant_id = $1", t.tenant_id)
    ok = _verify(stack, t.tenant_id)
    # anchor_forks: the stack's two ledgers anchored the chain in the same instant
    shape = {"ok": True, "entries": count["n"], "head_hash": ok["head_hash"], "anchored": ok["anchored"]}
    assert ok == shape | ({"anchor_forks": ok["anchor_forks"]} if "anchor_forks" in ok else {})
    # two deposits, three book transfers of one entry each; anchored within the interval: test_journal_anchors
    assert count["n"] == 5 and ok["anchored"] in (0, 1)
    everything = _verify(stack)
    [total] = db(stack, "SELECT count(*) AS n FROM ledger.journal_entries")
    assert everything["ok"] is True and everything["entries"] == total["n"], everything
    export = tmp_path / "export.jsonl"
    _export(stack, t.tenant_id, export)
    assert _script(export) == (0, f"ok: {count['n']} entries, head {ok['head_hash']}")

    entries = db(
        stack,
        "SELECT id, seq, hash FROM ledger.journal_entries WHERE tenant_id = $1 ORDER BY seq",
        t.tenant_id,
    )
    third, fifth = entries[2], entries[4]
    [posting] = db(stack, "SELECT id, amount FROM ledger.postings WHERE entry_id = $1 LIMIT 1", third["id"])
    with tampered(
        stack,
        [("UPDATE ledger.postings SET amount = amount * 2 WHERE id = $1", posting["id"])],
        [("UPDATE ledger.postings SET amount = $2 WHERE id = $1", posting["id"], posting["amount"])],
        triggers_off=JOURNAL,
    ):
        bad = _verify(stack, t.tenant_id)
        _export(stack, t.tenant_id, export)
        script = _script(export)
    assert (bad["ok"], bad["first_bad_entry_id"], bad["entries"]) == (False, third["id"], 2), bad
    assert script == (1, f"first bad entry: {third['id']} (seq 3, expected seq 3)")

    rehash = "UPDATE ledger.journal_entries SET hash = $2 WHERE id = $1"
    with tampered(stack, [(rehash, fifth["id"], "0" * 64)], [(rehash, fifth["id"], fifth["hash"])], JOURNAL):
        bad = _verify(stack, t.tenant_id)
    assert (bad["ok"], bad["first_bad_entry_id"]) == (False, fifth["id"]), bad

    [row] = db(stack, "SELECT * FROM ledger.journal_entries WHERE id = $1", third["id"])
    legs = db(stack, "SELECT * FROM ledger.postings WHERE entry_id = $1", third["id"])
    put_back = "INSERT INTO ledger.{} SELECT * FROM json_populate_record(NULL::ledger.{}, $1::json)"
    with tampered(
        stack,
        [
            ("DELETE FROM ledger.postings WHERE entry_id = $1", third["id"]),
            ("DELETE FROM ledger.journal_entries WHERE id = $1", third["id"]),
        ],
        [
            (put_back.format("journal_entries", "journal_entries"), _json(row)),
            *((put_back.format("postings", "postings"), _json(leg)) for leg in legs),
        ],
        triggers_off=JOURNAL,
    ):
        bad = _verify(stack, t.tenant_id)
        _export(stack, t.tenant_id, export)
        script = _script(export)
    assert (bad["ok"], bad["first_bad_entry_id"]) == (False, entries[3]["id"]), bad
    assert "entries 3 to 3 of the chain are missing" in bad["problem"]
    assert script == (1, f"first bad entry: {entries[3]['id']} (seq 4, expected seq 3)")
    assert _verify(stack, t.tenant_id)["ok"] is True  # restored: the chain holds again

"""The tamper-evident journal (contract 13.5): verify_journal is ok on real money flows, and
names the entry when a posting's amount is changed, a hash rewritten or an entry deleted by
SQL; the standalone script in docs/ agrees with it on the same export."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from devstack.suite import ROOT
from tests.conftest import Stack, make_tenant
from tests.support.admin import admin_ok, db
from tests.support.flows import book, created, funded, send

pytestmark = pytest.mark.integration


def _verify(stack: Stack, tenant_id: str | None = None) -> dict:
    narrow = {"tenant_id": tenant_id, "mode": "sandbox"} if tenant_id else {}
    return admin_ok(stack, "verify_journal", **narrow)


def _export(stack: Stack, tenant_id: str, path: Path) -> None:
    """The documented export: psql with docs/journal-export.sql."""
    url = stack.stores.database_url.replace("+asyncpg", "")
    out = subprocess.run(
        [
            "psql",
            url,
            "-v",
            f"tenant={tenant_id}",
            "-v",
            "mode=sandbox",
            "-At",
            "-f",
            "docs/journal-export.sql",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    path.write_text(out.stdout)


def _script(path: Path) -> tuple[int, str]:
    out = subprocess.run(
        [sys.executable, str(ROOT / "docs" / "verify_journal.py"), str(path)], capture_output=True, text=True
    )
    return out.returncode, (out.stdout + out.stderr).strip()


class _TriggersOff:
    """Journal rows are append-only (triggers): only someone who can switch them off can
    change one, which is what the chain must then catch."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack

    def __enter__(self) -> None:
        for table in ("postings", "journal_entries"):
            db(self.stack, f"ALTER TABLE ledger.{table} DISABLE TRIGGER USER")

    def __exit__(self, *exc: object) -> None:
        for table in ("postings", "journal_entries"):
            db(self.stack, f"ALTER TABLE ledger.{table} ENABLE TRIGGER USER")


def test_the_chain_verifies_and_names_each_tampered_entry(stack: Stack, tmp_path: Path) -> None:
    t = make_tenant(stack)
    a, b = funded(t, "100.00"), funded(t, "40.00")
    for amount in ("10.00", "2.50", "0.02"):
        body = book(a["wallet_id"], b["wallet_id"], amount)
        body["developer_fee"] = {"flat_amount": "0.01"}
        assert created(send(t, "/v1/transfers", body))["state"] == "completed"
    [count] = db(stack, "SELECT count(*) AS n FROM ledger.journal_entries WHERE tenant_id = $1", t.tenant_id)
    ok = _verify(stack, t.tenant_id)
    assert ok == {"ok": True, "entries": count["n"], "head_hash": ok["head_hash"]} and count["n"] == 8
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
    with _TriggersOff(stack):
        db(stack, "UPDATE ledger.postings SET amount = amount * 2 WHERE id = $1", posting["id"])
        try:
            bad = _verify(stack, t.tenant_id)
            _export(stack, t.tenant_id, export)
            script = _script(export)
        finally:
            db(
                stack,
                "UPDATE ledger.postings SET amount = $2 WHERE id = $1",
                posting["id"],
                posting["amount"],
            )
    assert (bad["ok"], bad["first_bad_entry_id"], bad["entries"]) == (False, third["id"], 2), bad
    assert script == (1, f"first bad entry: {third['id']} (seq 3, expected seq 3)")

    with _TriggersOff(stack):
        db(stack, "UPDATE ledger.journal_entries SET hash = $2 WHERE id = $1", fifth["id"], "0" * 64)
        try:
            bad = _verify(stack, t.tenant_id)
        finally:
            db(stack, "UPDATE ledger.journal_entries SET hash = $2 WHERE id = $1", fifth["id"], fifth["hash"])
    assert (bad["ok"], bad["first_bad_entry_id"]) == (False, fifth["id"]), bad

    [row] = db(stack, "SELECT * FROM ledger.journal_entries WHERE id = $1", third["id"])
    legs = db(stack, "SELECT * FROM ledger.postings WHERE entry_id = $1", third["id"])
    with _TriggersOff(stack):
        db(stack, "DELETE FROM ledger.postings WHERE entry_id = $1", third["id"])
        db(stack, "DELETE FROM ledger.journal_entries WHERE id = $1", third["id"])
        try:
            bad = _verify(stack, t.tenant_id)
            _export(stack, t.tenant_id, export)
            script = _script(export)
        finally:
            db(
                stack,
                "INSERT INTO ledger.journal_entries"
                " SELECT * FROM json_populate_record(NULL::ledger.journal_entries, $1::json)",
                _json(row),
            )
            for leg in legs:
                db(
                    stack,
                    "INSERT INTO ledger.postings"
                    " SELECT * FROM json_populate_record(NULL::ledger.postings, $1::json)",
                    _json(leg),
                )
    assert (bad["ok"], bad["first_bad_entry_id"]) == (False, entries[3]["id"]), bad
    assert "entries 3 to 3 of the chain are missing" in bad["problem"]
    assert script == (1, f"first bad entry: {entries[3]['id']} (seq 4, expected seq 3)")
    assert _verify(stack, t.tenant_id)["ok"] is True  # restored: the chain holds again


def _json(row: dict) -> str:
    """A row as JSON that json_populate_record reads back exactly (times, decimals as text)."""
    return json.dumps(
        {k: v.isoformat() if hasattr(v, "isoformat") else v if v is None else str(v) for k, v in row.items()}
    )

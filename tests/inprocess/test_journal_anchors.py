"""The anchored journal (Ed25519 and chained; docs/security.md, "Journal anchors"): the ledger
publishes its chain heads, signed, to a topic kept forever, and verify_journal finds
what someone with database write did behind Sluice's back, each undone afterwards so the
journal holds again:

- a rewritten posting with every later hash recomputed and the head row moved to match (the
  chain alone verifies, as the standalone script shows): ``anchor_mismatch``; the publisher
  does not anchor the rewritten head;
- a deleted head row: ``missing_head``;
- a truncated tail with the head row moved back: ``truncated_tail``;
- a withdrawal's destination address changed: the chain breaks at the transfer's first entry.

The same checks against a fake journal: tests/unit/test_journal_anchors.py; the topic's
configuration on the real broker: tests/integration/test_journal_anchors.py."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Stack, make_tenant
from tests.support.admin import db, tampered
from tests.support.flows import created, funded, send, wait_state
from tests.support.journal import (
    JOURNAL,
    _anchored,
    _entries,
    _export,
    _json,
    _rewritten,
    _script,
    _tenant_with_chain,
    _verify,
)

pytestmark = pytest.mark.inprocess


def test_a_rewritten_posting_with_recomputed_hashes_is_an_anchor_mismatch(
    stack: Stack, tmp_path: Path
) -> None:
    t = _tenant_with_chain(stack)
    anchor = _anchored(stack, t.tenant_id)
    ok = _verify(stack, t.tenant_id)
    assert (ok["ok"], ok["anchored"], ok["head_hash"]) == (True, 1, anchor["head_hash"]), ok
    third = _entries(stack, t.tenant_id)[2]
    export = tmp_path / "export.jsonl"
    with _rewritten(stack, t.tenant_id, third):
        _export(stack, t.tenant_id, export)
        script = _script(export)
        time.sleep(2 * float(stack.env["SLUICE_JOURNAL_ANCHOR_INTERVAL_S"]) + 1)  # the publisher's turns
        bad = _verify(stack, t.tenant_id)
    assert script[0] == 0, script  # the chain alone holds: rewritten end to end
    # Every anchor is compared: the first one past the rewrite is named, the newest at the latest.
    assert (bad["ok"], bad["reason"]) == (False, "anchor_mismatch"), bad
    assert third["seq"] <= bad["anchor"]["seq"] <= anchor["seq"], bad
    assert bad["first_bad_entry_id"] == _entries(stack, t.tenant_id)[bad["anchor"]["seq"] - 1]["id"]
    assert _verify(stack, t.tenant_id)["ok"] is True  # put back: the chain and its anchor agree


def test_a_deleted_head_row_is_a_missing_head(stack: Stack) -> None:
    t = _tenant_with_chain(stack, transfers=1)
    anchor = _anchored(stack, t.tenant_id)
    delete = "DELETE FROM ledger.journal_chains WHERE tenant_id = $1 AND mode = 'sandbox'"
    put_back = (
        "INSERT INTO ledger.journal_chains (tenant_id, mode, seq, head_hash) VALUES ($1, 'sandbox', $2, $3)"
    )
    with tampered(
        stack, [(delete, t.tenant_id)], [(put_back, t.tenant_id, anchor["seq"], anchor["head_hash"])]
    ):
        bad = _verify(stack, t.tenant_id)
    assert (bad["ok"], bad["reason"], bad["tenant_id"], bad["anchor"]["seq"]) == (
        False,
        "missing_head",
        t.tenant_id,
        anchor["seq"],
    ), bad
    assert _verify(stack, t.tenant_id)["ok"] is True


def test_a_truncated_tail_is_found_against_its_anchor(stack: Stack) -> None:
    t = _tenant_with_chain(stack, transfers=2)
    anchor = _anchored(stack, t.tenant_id)
    rows = _entries(stack, t.tenant_id)
    cut, kept = rows[-2:], rows[-3]
    legs = [
        leg for e in cut for leg in db(stack, "SELECT * FROM ledger.postings WHERE entry_id = $1", e["id"])
    ]
    head = (
        "UPDATE ledger.journal_chains SET seq = $2, head_hash = $3 WHERE tenant_id = $1 AND mode = 'sandbox'"
    )
    insert = "INSERT INTO ledger.{0} SELECT * FROM json_populate_record(NULL::ledger.{0}, $1::json)"
    change: list[tuple[Any, ...]] = [
        ("DELETE FROM ledger.postings WHERE entry_id = $1", e["id"]) for e in cut
    ]
    change += [("DELETE FROM ledger.journal_entries WHERE id = $1", e["id"]) for e in cut]
    change.append((head, t.tenant_id, kept["seq"], kept["hash"]))
    undo: list[tuple[Any, ...]] = [(insert.format("journal_entries"), _json(e)) for e in cut]
    undo += [(insert.format("postings"), _json(leg)) for leg in legs]
    undo.append((head, t.tenant_id, anchor["seq"], anchor["head_hash"]))
    with tampered(stack, change, undo, triggers_off=JOURNAL):
        bad = _verify(stack, t.tenant_id)
    assert (bad["ok"], bad["reason"], bad["first_bad_entry_id"]) == (False, "truncated_tail", None), bad
    assert bad["entries"] == kept["seq"] and bad["anchor"]["seq"] == anchor["seq"] == rows[-1]["seq"]
    assert _verify(stack, t.tenant_id)["ok"] is True


def test_a_changed_withdrawal_address_breaks_the_chain(stack: Stack) -> None:
    t = make_tenant(stack, rate_limit=10000)
    a = funded(t, "100.00")
    body = {
        "source": {
            "payment_rail": "provider_wallet",
            "currency": "USDC",
            "amount": "40",
            "provider_wallet_id": a["wallet_id"],
        },
        "destination": {
            "payment_rail": "stablecoin",
            "currency": "USDC",
            # An address of its own: the admin fuzzer screens 0xabab... (tests/support/schemathesis_hooks)
            "address": "0x" + hashlib.sha256(t.tenant_id.encode()).hexdigest()[:40],
            "chain": "base",
        },
        "idempotency_key": "wd-" + t.tenant_id,
    }
    tr = created(send(t, "/v1/transfers", body))
    wait_state(t, f"/v1/transfers/{tr['transfer_id']}", "completed", wait_s=30)
    [row] = db(stack, "SELECT destination FROM ledger.transfers WHERE id = $1", tr["transfer_id"])
    [hold] = db(
        stack,
        "SELECT id FROM ledger.journal_entries WHERE transfer_id = $1 AND kind = 'transfer_hold'",
        tr["transfer_id"],
    )
    moved = {
        **row["destination"],
        "address": "0x" + hashlib.sha256(tr["transfer_id"].encode()).hexdigest()[:40],
    }
    sql = "UPDATE ledger.transfers SET destination = $2 WHERE id = $1"  # the test codec encodes jsonb
    with tampered(stack, [(sql, tr["transfer_id"], moved)], [(sql, tr["transfer_id"], row["destination"])]):
        bad = _verify(stack, t.tenant_id)
    assert (bad["ok"], bad["reason"], bad["first_bad_entry_id"]) == (False, "entry_mismatch", hold["id"]), bad
    assert _verify(stack, t.tenant_id)["ok"] is True

"""The anchored journal (Ed25519 and chained; docs/security.md, "Journal anchors") on the stack:
the ledger publishes its chain heads, signed, to a topic kept forever, and verify_journal finds
what someone with database write did behind Sluice's back, each undone afterwards so the
journal holds again:

- a rewritten posting with every later hash recomputed and the head row moved to match (the
  chain alone verifies, as the standalone script shows): ``anchor_mismatch``; the publisher
  does not anchor the rewritten head;
- a deleted head row: ``missing_head``;
- a truncated tail with the head row moved back: ``truncated_tail``;
- a withdrawal's destination address changed: the chain breaks at the transfer's first entry.

The same checks against a fake journal: tests/unit/test_journal_anchors.py."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import msgspec
import pytest
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from common.contracts.anchors import ANCHORS
from common.topics import Topics
from ledger.anchor_stream import AnchorVerifyKeys
from ledger.core import chain
from tests.conftest import Stack, Tenant, make_tenant
from tests.support.admin import _read, admin_ok, db, tampered
from tests.support.db import run_async
from tests.support.flows import book, created, funded, send, wait_state
from tests.support.journal import JOURNAL, _export, _json, _script

pytestmark = pytest.mark.integration


def _verify(stack: Stack, tenant_id: str) -> dict[str, Any]:
    return admin_ok(stack, "verify_journal", tenant_id=tenant_id, mode="sandbox")


def _topic(stack: Stack) -> str:
    return Topics(stack.settings().topic_prefix).journal_anchors


def _anchored(stack: Stack, tenant_id: str) -> dict[str, Any]:
    """Wait until the chain's head as it is now is anchored: that anchor (read back from Kafka)."""
    [head] = db(stack, "SELECT seq, head_hash FROM ledger.journal_chains WHERE tenant_id = $1", tenant_id)
    found = run_async(
        _read(
            stack,
            _topic(stack),
            lambda a: a.get("tenant_id") == tenant_id and a.get("seq") == head["seq"],
            bool,
            20.0,
        )
    )
    assert found, f"no anchor of {tenant_id} at entry {head['seq']}"
    keys = AnchorVerifyKeys.parse(stack.env["SLUICE_JOURNAL_ANCHOR_VERIFY_KEYS"])  # public keys only
    assert found[0]["head_hash"] == head["head_hash"] and keys.verifies(
        ANCHORS.decode(msgspec.json.encode(found[0]))
    )
    return found[0]


def _tenant_with_chain(stack: Stack, transfers: int = 3) -> Tenant:
    t = make_tenant(stack, rate_limit=10000)
    a, b = funded(t, "100.00"), funded(t, "40.00")
    for n in range(transfers):
        assert created(send(t, "/v1/transfers", book(a["wallet_id"], b["wallet_id"], f"{n + 1}.00")))["state"]
    return t


def _entries(stack: Stack, tenant_id: str) -> list[dict[str, Any]]:
    return db(stack, "SELECT * FROM ledger.journal_entries WHERE tenant_id = $1 ORDER BY seq", tenant_id)


def _rehashed(stack: Stack, tenant_id: str, from_seq: int) -> list[tuple[Any, ...]]:
    """The statements that set every hash from entry ``from_seq`` on, and the head, to what the
    entries' stored content (as it is now) gives: how a rewrite covers its tracks."""
    rows = _entries(stack, tenant_id)
    previous = rows[from_seq - 2]["hash"] if from_seq > 1 else chain.GENESIS
    out: list[tuple[Any, ...]] = []
    for e in rows[from_seq - 1 :]:
        legs = db(
            stack, "SELECT account_id, currency, amount FROM ledger.postings WHERE entry_id = $1", e["id"]
        )
        terms = None
        if e["transfer_id"]:
            [t] = db(stack, "SELECT * FROM ledger.transfers WHERE id = $1", e["transfer_id"])
            terms = chain.transfer_text(t)
        text = chain.canonical_v2(
            e["id"],
            e["tenant_id"],
            e["mode"],
            e["kind"],
            e["transfer_id"],
            e["deposit_id"],
            e["created_at"],
            [(p["account_id"], p["currency"], p["amount"]) for p in legs],
            terms,
        )
        previous = chain.link(previous, text)
        out.append(("UPDATE ledger.journal_entries SET hash = $2 WHERE id = $1", e["id"], previous))
    head = (
        "UPDATE ledger.journal_chains SET seq = $2, head_hash = $3 WHERE tenant_id = $1 AND mode = 'sandbox'"
    )
    out.append((head, tenant_id, rows[-1]["seq"], previous))
    return out


def _put_back(stack: Stack, tenant_id: str) -> list[tuple[Any, ...]]:
    """Statements that restore every hash and the head as they are now."""
    rows = _entries(stack, tenant_id)
    [head] = db(stack, "SELECT seq, head_hash FROM ledger.journal_chains WHERE tenant_id = $1", tenant_id)
    sql = "UPDATE ledger.journal_entries SET hash = $2 WHERE id = $1"
    back: list[tuple[Any, ...]] = [(sql, e["id"], e["hash"]) for e in rows]
    head_sql = (
        "UPDATE ledger.journal_chains SET seq = $2, head_hash = $3 WHERE tenant_id = $1 AND mode = 'sandbox'"
    )
    return [*back, (head_sql, tenant_id, head["seq"], head["head_hash"])]


@contextmanager
def _rewritten(stack: Stack, tenant_id: str, entry: dict[str, Any]) -> Iterator[None]:
    """One posting of ``entry`` doubled (and its other side, so the entry still balances),
    every later hash recomputed, the head moved to match; undone on the way out."""
    legs = db(stack, "SELECT id, amount FROM ledger.postings WHERE entry_id = $1 ORDER BY id", entry["id"])
    undo = [("UPDATE ledger.postings SET amount = $2 WHERE id = $1", p["id"], p["amount"]) for p in legs]
    undo += _put_back(stack, tenant_id)
    double = [("UPDATE ledger.postings SET amount = amount * 2 WHERE id = $1", p["id"]) for p in legs]
    with tampered(stack, double, undo, triggers_off=JOURNAL):
        for sql, *args in _rehashed(stack, tenant_id, entry["seq"]):
            db(stack, sql, *args)
        yield


def test_the_anchors_topic_is_kept_forever_and_never_compacted(stack: Stack) -> None:
    async def configs() -> dict[str, str]:
        admin = AIOKafkaAdminClient(bootstrap_servers=stack.stores.kafka_bootstrap)
        await admin.start()
        try:
            [found] = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, _topic(stack))])
        finally:
            await admin.close()
        return {name: value for name, value, *_ in found.resources[0][4]}

    found = run_async(configs())
    assert (found["retention.ms"], found["cleanup.policy"]) == ("-1", "delete"), found


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

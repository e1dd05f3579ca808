"""The journal's export and its standalone verifier as a partner or auditor runs them
(docs/journal-export.sql, docs/verify_journal.py), and the anchored journal's steps (a chain,
its anchor read back, verify_journal, a rewrite covering its tracks), shared by the journal
tests of both tiers."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import msgspec

from common.contracts.anchors import ANCHORS
from common.topics import Topics
from ledger.anchor_stream import AnchorVerifyKeys
from ledger.core import chain
from tests.conftest import Stack, Tenant, make_tenant
from tests.support.admin import _read, admin_ok, db, tampered
from tests.support.db import run_async
from tests.support.flows import book, created, funded, send
from tools.stack.processes import ROOT


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


JOURNAL = ("ledger.postings", "ledger.journal_entries")  # append-only (triggers)


def _json(row: dict) -> str:
    """A row as JSON that json_populate_record reads back exactly (times, decimals as text)."""
    return json.dumps(
        {k: v.isoformat() if hasattr(v, "isoformat") else v if v is None else str(v) for k, v in row.items()}
    )


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

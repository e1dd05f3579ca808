"""The history seeder of ``make bench-history`` (tools.bench.seed) is faithful: 2,000 seeded
transfers over two tenants' funded wallets leave a journal that verify_journal and reconcile
find clean, through admin as an operator asks (every hash recomputed, every balance equal to
its postings, every transfer's postings matching its state and history), each transfer with
what the API leaves (a book transfer's one entry and two postings, two state changes, its
inbox result, its compliance decision and cap hold, its stored event numbered after the
tenant's others); and a
transfer through the API on top books, extends the seeded chain and verifies with it.

Correctness, not speed: ``make bench-history`` measures (docs/performance/index.md, "A long history")."""

from __future__ import annotations

import pytest

from tests.conftest import Stack, make_tenant
from tests.support.admin import admin_ok, db
from tests.support.flows import book, created, funded, send
from tools.bench import seed

pytestmark = pytest.mark.inprocess

SEEDED = 2000


def _checks(stack: Stack, tenant_ids: list[str]) -> tuple[dict, list[dict]]:
    journal = admin_ok(stack, "verify_journal", mode="sandbox")
    reconciled = [admin_ok(stack, "reconcile", tenant_id=t, mode="sandbox") for t in tenant_ids]
    return journal, reconciled


def _counts(stack: Stack, tenant_ids: list[str]) -> dict[str, int]:
    [row] = db(
        stack,
        """SELECT
          (SELECT count(*) FROM ledger.transfers WHERE tenant_id = ANY($1)) AS transfers,
          (SELECT count(*) FROM ledger.journal_entries WHERE tenant_id = ANY($1) AND transfer_id IS NOT NULL)
            AS entries,
          (SELECT count(*) FROM ledger.postings p JOIN ledger.journal_entries e ON e.id = p.entry_id
            WHERE e.tenant_id = ANY($1) AND e.transfer_id IS NOT NULL) AS postings,
          (SELECT count(*) FROM ledger.state_changes s JOIN ledger.transfers t ON t.id = s.transfer_id
            WHERE t.tenant_id = ANY($1)) AS changes,
          (SELECT count(*) FROM compliance.decisions d JOIN ledger.transfers t ON t.decision_id = d.id
            AND d.transfer_id = t.id AND d.outcome = 'allow' WHERE t.tenant_id = ANY($1)) AS decisions,
          (SELECT count(*) FROM compliance.holds h JOIN ledger.transfers t ON t.id = h.transfer_id
            WHERE t.tenant_id = ANY($1)) AS holds,
          (SELECT count(*) FROM webhooks.events
            WHERE tenant_id = ANY($1) AND type = 'transfer.created') AS events,
          (SELECT count(*) FROM ledger.inbox i JOIN compliance.decisions d ON d.command_id = i.command_id
            JOIN ledger.transfers t ON t.id = d.transfer_id WHERE t.tenant_id = ANY($1)) AS results""",
        tenant_ids,
    )
    return dict(row)


def test_a_seeded_history_verifies_reconciles_and_takes_an_api_transfer_on_top(stack: Stack) -> None:
    tenants = [make_tenant(stack, rate_limit=100_000) for _ in range(2)]
    wallets = {t.tenant_id: [funded(t, "1000.00")["wallet_id"] for _ in range(4)] for t in tenants}
    ids = list(wallets)
    first = created(
        send(tenants[0], "/v1/transfers", book(wallets[ids[0]][0], wallets[ids[0]][1], "1.00"))
    )  # an API entry first
    assert first["state"] == "completed"

    seeded = seed.seed(stack.stores.database_url, stack.env, SEEDED, workers=1, only=ids)
    assert seeded.transfers + seeded.refused == SEEDED and seeded.refused == 0, seeded
    assert seeded.entries == SEEDED  # a book transfer settles at once: one entry

    journal, reconciled = _checks(stack, ids)
    assert journal["ok"] is True, journal
    assert journal["entries"] >= SEEDED + 1 + 2 * 4  # the seeded, the API transfer, the deposits
    assert all(r["ok"] for r in reconciled), [r["discrepancies"] for r in reconciled]
    n = SEEDED + 1
    assert _counts(stack, ids) == {
        "transfers": n,
        "entries": n,
        "postings": 2 * n,
        "changes": 2 * n,
        "decisions": n,
        "holds": n,
        "events": n,
        "results": n,
    }
    gaps = db(
        stack,
        "SELECT tenant_id, count(*) AS n, max(sequence) AS top FROM webhooks.events"
        " WHERE tenant_id = ANY($1) GROUP BY tenant_id",
        ids,
    )
    assert all(g["n"] == g["top"] for g in gaps), gaps  # one number per event, none skipped

    [head] = db(stack, "SELECT seq FROM ledger.journal_chains WHERE tenant_id = $1", ids[0])
    on_top = created(send(tenants[0], "/v1/transfers", book(wallets[ids[0]][2], wallets[ids[0]][3], "2.50")))
    assert on_top["state"] == "completed"
    seqs = db(
        stack,
        "SELECT seq FROM ledger.journal_entries WHERE transfer_id = $1 ORDER BY seq",
        on_top["transfer_id"],
    )
    assert [r["seq"] for r in seqs] == [head["seq"] + 1]  # the seeded chain, extended
    journal, reconciled = _checks(stack, ids)
    assert journal["ok"] is True, journal
    assert all(r["ok"] for r in reconciled), [r["discrepancies"] for r in reconciled]

"""ledger: the tamper-evident journal

Every journal entry gets ``seq`` and ``hash`` (its link in the hash chain of its tenant and
mode, ``ledger.core.chain``); ``journal_chains`` keeps each chain's head. Entries written before
this migration are chained here, per tenant and mode in (created_at, id) order. Journal
entries become append-only like their postings.
"""

from collections import defaultdict
from decimal import Decimal

import sqlalchemy as sa
from alembic import op

from ledger.core import chain

revision = "0004"
down_revision = "0003"


def upgrade() -> None:
    op.execute("ALTER TABLE ledger.journal_entries ADD COLUMN seq BIGINT, ADD COLUMN hash TEXT")
    op.execute(
        """CREATE TABLE ledger.journal_chains (
            tenant_id TEXT NOT NULL,
            mode TEXT NOT NULL,
            seq BIGINT NOT NULL,
            head_hash TEXT NOT NULL,
            PRIMARY KEY (tenant_id, mode)
        )"""
    )
    _chain_existing_entries()
    op.execute(
        "ALTER TABLE ledger.journal_entries ALTER COLUMN seq SET NOT NULL, ALTER COLUMN hash SET NOT NULL"
    )
    op.execute(
        "ALTER TABLE ledger.journal_entries"
        " ADD CONSTRAINT journal_entries_chain UNIQUE (tenant_id, mode, seq)"
    )
    op.execute(
        """CREATE TRIGGER journal_entries_append_only BEFORE UPDATE OR DELETE ON ledger.journal_entries
            FOR EACH ROW EXECUTE FUNCTION ledger.refuse_change()"""
    )


def _chain_existing_entries() -> None:
    bind = op.get_bind()
    postings: dict[str, list[tuple[str, Decimal]]] = defaultdict(list)
    for entry_id, account_id, amount in bind.execute(
        sa.text("SELECT entry_id, account_id, amount FROM ledger.postings")
    ):
        postings[entry_id].append((account_id, amount))
    heads: dict[tuple[str, str], tuple[int, str]] = {}
    rows = []
    for e in bind.execute(
        sa.text(
            "SELECT id, tenant_id, mode, kind, transfer_id, deposit_id, created_at"
            " FROM ledger.journal_entries ORDER BY tenant_id, mode, created_at, id"
        )
    ):
        seq, previous = heads.get((e.tenant_id, e.mode), (0, chain.GENESIS))
        text = chain.canonical(
            e.id, e.tenant_id, e.mode, e.kind, e.transfer_id, e.deposit_id, e.created_at, postings[e.id]
        )
        heads[(e.tenant_id, e.mode)] = (seq + 1, chain.link(previous, text))
        rows.append({"id": e.id, "seq": seq + 1, "hash": heads[(e.tenant_id, e.mode)][1]})
    if rows:
        bind.execute(
            sa.text("UPDATE ledger.journal_entries SET seq = :seq, hash = :hash WHERE id = :id"), rows
        )
        bind.execute(
            sa.text("INSERT INTO ledger.journal_chains VALUES (:tenant_id, :mode, :seq, :head_hash)"),
            [{"tenant_id": t, "mode": m, "seq": s, "head_hash": h} for (t, m), (s, h) in heads.items()],
        )


def downgrade() -> None:
    op.execute("DROP TRIGGER journal_entries_append_only ON ledger.journal_entries")
    op.execute("DROP TABLE ledger.journal_chains")
    op.execute(
        "ALTER TABLE ledger.journal_entries DROP CONSTRAINT journal_entries_chain,"
        " DROP COLUMN seq, DROP COLUMN hash"
    )

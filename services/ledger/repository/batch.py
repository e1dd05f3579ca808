"""The ledger's batch in four statements, whatever its size: hold, read, lock, write.

1. :func:`claim_batch`: the batch's command ids held (advisory locks), then the inbox read
   for its writes (the results of commands seen before; nothing written), the transfers
   already recorded under the batch's idempotency keys and every wallet the batch names.
2. :func:`lock_batch`: the new transfers inserted (a concurrent twin of an idempotency key
   waits here, before any account lock), the missing external accounts created, the wallet
   accounts locked in id order and the chain heads locked in key order. Each step waits for
   the one before it (the CTE after reads the one before), so the lock order is the one the
   journal has always had: nothing waits on a lock while holding an account lock.
3. :func:`write_batch`: everything the batch decided in memory (customers, the journal's
   entries, postings, balance moves and chain heads, refused transfers taken back, state
   changes, the inbox rows with their results, the outbox rows), then the commit.

Each text is built once from the tables of ``ledger.models`` and prepared once per connection.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from common.bulk import Statement, columns_of, fetch, pg_type, qualified
from common.faults import LostRace
from ledger.core.chain import GENESIS
from ledger.models import (
    Transfer,
    Wallet,
    accounts,
    customers,
    inbox,
    journal_chains,
    journal_entries,
    outbox,
    postings,
    state_changes,
    transfers,
    wallets,
)
from ledger.repository.base import read_only

__all__ = ["Claimed", "Locked", "WalletNames", "Written", "claim_batch", "lock_batch", "write_batch"]

ChainKey = tuple[str, str]
TRANSFER_COLUMNS = [c.name for c in transfers.c]
EXTERNAL_COLUMNS = ["id", "tenant_id", "mode", "currency", "kind"]
CUSTOMER_COLUMNS = [c.name for c in customers.c]
ENTRY_COLUMNS = [c.name for c in journal_entries.c]
POSTING_COLUMNS = ["entry_id", "account_id", "currency", "amount"]
CHANGE_COLUMNS = ["transfer_id", "from_state", "to_state", "cause", "request_id"]
OUTBOX_COLUMNS = ["topic", "key", "partition", "payload"]
_TEXT = "TEXT[]"

# ---- 1. claim and read ----

# Each write's command id held for the transaction, in one order (no two batches deadlock),
# BEFORE the inbox is read by the next statement: a command redelivered to two instances at
# once makes the second wait here until the first commits, then read its result. The claim
# writes no row (the inbox row is written once, with the result, by WRITE); an advisory lock
# writes no WAL. Two ids of one hash only wait for each other.
_hold = Statement()
HOLD = f"""
SELECT count(pg_advisory_xact_lock(k)) AS held
FROM (SELECT DISTINCT hashtextextended('ledger-inbox:' || id, 0) AS k
      FROM unnest({_hold.param("ids", "TEXT[]")}) AS id ORDER BY k) AS held
"""

_claim = Statement()
_ids = _claim.param("ids", _TEXT)
CLAIM = f"""
SELECT
    ARRAY(SELECT ROW(i.command_id, i.result) FROM {qualified(inbox)} i
          WHERE i.command_id = ANY({_ids})) AS seen,
    ARRAY(SELECT t FROM {qualified(transfers)} t
          JOIN unnest({_claim.param("k.tenant_id", _TEXT)}, {_claim.param("k.mode", _TEXT)},
                      {_claim.param("k.key", _TEXT)}) AS k(tenant_id, mode, key)
            ON t.tenant_id = k.tenant_id AND t.mode = k.mode AND t.idempotency_key = k.key) AS known,
    ARRAY(SELECT w FROM {qualified(wallets)} w
          WHERE w.tenant_id = ANY({_claim.param("w.tenant_id", _TEXT)})
            AND (w.id = ANY({_claim.param("w.id", _TEXT)})
                 OR w.deposit_address = ANY({_claim.param("w.address", _TEXT)})
                 OR w.customer_id = ANY({_claim.param("w.customer_id", _TEXT)}))
          ORDER BY w.id) AS wallets,
    ARRAY(SELECT t.id FROM {qualified(transfers)} t
          WHERE t.id = ANY({_claim.param("t.id", _TEXT)})) AS taken
"""


@dataclass
class Claimed:
    """What the batch's first statement found."""

    fresh: set[str]  # not in the inbox: to execute (and to record, :func:`write_batch`)
    previous: dict[str, bytes | None]  # results of commands seen before (None: no result)
    known: list[Transfer]
    wallets: list[Wallet]
    taken: set[str] = field(default_factory=set)  # the batch's transfer ids already recorded


@dataclass(frozen=True)
class WalletNames:
    tenant_ids: set[str] = field(default_factory=set)
    ids: set[str] = field(default_factory=set)
    addresses: set[str] = field(default_factory=set)
    customer_ids: set[str] = field(default_factory=set)


async def claim_batch(
    session: AsyncSession,
    command_ids: Sequence[str],
    keys: Sequence[tuple[str, str, str]],
    names: WalletNames,
    transfer_ids: Sequence[str] = (),
) -> Claimed:
    """Hold ``command_ids`` (distinct) for the transaction (:data:`HOLD`), then read which of
    them the inbox has answered and what the batch's transfers name (and which of
    ``transfer_ids`` are recorded already). No row is written: the inbox row of a command is
    written once, with its result, by :func:`write_batch`."""
    await fetch(session, HOLD, _hold.args({"ids": list(command_ids)}))
    ks = sorted(set(keys))
    args = _claim.args(
        {
            "ids": list(command_ids),
            "k.tenant_id": [k[0] for k in ks],
            "k.mode": [k[1] for k in ks],
            "k.key": [k[2] for k in ks],
            "w.tenant_id": sorted(names.tenant_ids),
            "w.id": sorted(names.ids),
            "w.address": sorted(names.addresses),
            "w.customer_id": sorted(names.customer_ids),
            "t.id": sorted(set(transfer_ids)),
        }
    )
    [row] = await fetch(session, CLAIM, args)
    previous = {cid: (None if result is None else bytes(result)) for cid, result in row["seen"]}
    return Claimed(
        {c for c in command_ids if c not in previous},
        previous,
        [read_only(Transfer, dict(r)) for r in row["known"]],
        [read_only(Wallet, dict(r)) for r in row["wallets"]],
        set(row["taken"]),
    )


# ---- 2. lock ----

_lock = Statement()
LOCK = f"""
WITH inserted AS (
    {
    _lock.insert(
        "t",
        transfers,
        TRANSFER_COLUMNS,
        "ON CONFLICT ON CONSTRAINT transfers_idempotency DO NOTHING RETURNING id",
    )
}
), externals AS (
    {_lock.insert("x", accounts, EXTERNAL_COLUMNS, "ON CONFLICT (id) DO NOTHING RETURNING id")}
), locked AS (
    SELECT a.id, a.balance FROM {qualified(accounts)} a
    WHERE a.id = ANY({_lock.param("accounts", _TEXT)})
      AND (SELECT count(*) FROM inserted) + (SELECT count(*) FROM externals) >= 0
    ORDER BY a.id FOR UPDATE
), heads AS (
    INSERT INTO {qualified(journal_chains)} (tenant_id, mode, seq, head_hash)
    SELECT k.tenant_id, k.mode, 0, {_lock.param("genesis", "TEXT")}
    FROM unnest({_lock.param("c.tenant_id", _TEXT)}, {_lock.param("c.mode", _TEXT)}) AS k(tenant_id, mode)
    WHERE (SELECT count(*) FROM locked) >= 0
    ORDER BY k.tenant_id, k.mode
    ON CONFLICT (tenant_id, mode) DO UPDATE SET seq = {journal_chains.name}.seq
    RETURNING tenant_id, mode, seq, head_hash
)
SELECT
    ARRAY(SELECT id FROM inserted) AS inserted,
    ARRAY(SELECT ROW(id, balance) FROM locked) AS balances,
    ARRAY(SELECT ROW(tenant_id, mode, seq, head_hash) FROM heads) AS heads
"""


@dataclass
class Locked:
    inserted: set[str]
    balances: dict[str, Decimal]
    heads: dict[ChainKey, tuple[int, str]]


async def lock_batch(
    session: AsyncSession,
    new_transfers: Sequence[Mapping[str, Any]],
    externals: Sequence[Mapping[str, Any]],
    account_ids: Sequence[str],
    chains: Sequence[ChainKey],
) -> Locked:
    """Insert the transfers (idempotency keys sorted), create the external accounts (id order),
    lock the wallet accounts (id order) and the chain heads (key order): one statement."""
    rows = sorted(new_transfers, key=lambda r: (r["tenant_id"], r["mode"], r["idempotency_key"]))
    ext = sorted(externals, key=lambda r: r["id"])
    keys = sorted(set(chains))
    values: dict[str, Any] = {
        **columns_of(transfers, rows, "t", TRANSFER_COLUMNS),
        **columns_of(accounts, ext, "x", EXTERNAL_COLUMNS),
        "accounts": sorted(set(account_ids)),
        "genesis": GENESIS,
        "c.tenant_id": [k[0] for k in keys],
        "c.mode": [k[1] for k in keys],
    }
    [row] = await fetch(session, LOCK, _lock.args(values))
    return Locked(
        set(row["inserted"]),
        dict(row["balances"]),
        {(t, m): (seq, head) for t, m, seq, head in row["heads"]},
    )


# ---- 3. write ----

_write = Statement()
_money = pg_type(accounts.c.balance)
WRITE = f"""
WITH pruned AS (
    DELETE FROM {qualified(outbox)} WHERE id = ANY({_write.param("pruned", "BIGINT[]")})
), refused AS (
    DELETE FROM {qualified(transfers)} WHERE id = ANY({_write.param("refused", _TEXT)})
), new_customers AS (
    {_write.insert("cu", customers, CUSTOMER_COLUMNS)}
), entries AS (
    {_write.insert("e", journal_entries, ENTRY_COLUMNS)}
), entry_postings AS (
    {_write.insert("p", postings, POSTING_COLUMNS)}
), moved AS (
    UPDATE {qualified(accounts)} a SET balance = a.balance + d.delta
    FROM unnest({_write.param("d.id", _TEXT)}, {_write.param("d.delta", f"{_money}[]")}) AS d(id, delta)
    WHERE a.id = d.id
), chains AS (
    UPDATE {qualified(journal_chains)} c SET seq = h.seq, head_hash = h.head_hash
    FROM unnest({_write.param("h.tenant_id", _TEXT)}, {_write.param("h.mode", _TEXT)},
                {_write.param("h.seq", "BIGINT[]")}, {_write.param("h.head_hash", _TEXT)})
         AS h(tenant_id, mode, seq, head_hash)
    WHERE c.tenant_id = h.tenant_id AND c.mode = h.mode
), changes AS (
    {_write.insert("s", state_changes, CHANGE_COLUMNS)}
), recorded AS (
    INSERT INTO {qualified(inbox)} (command_id, result)
    SELECT * FROM unnest({_write.param("r.id", _TEXT)}, {_write.param("r.result", "BYTEA[]")})
    ON CONFLICT DO NOTHING RETURNING command_id
), sent AS (
    {_write.insert("o", outbox, OUTBOX_COLUMNS, "RETURNING id")}
)
SELECT ARRAY(SELECT id FROM sent) AS sent, (SELECT count(*) FROM recorded) AS recorded
"""


@dataclass
class Written:
    """Everything a batch writes in its last statement (each part may be empty)."""

    customers: list[dict[str, Any]] = field(default_factory=list)
    entries: list[dict[str, Any]] = field(default_factory=list)
    postings: list[dict[str, Any]] = field(default_factory=list)
    deltas: dict[str, Decimal] = field(default_factory=dict)
    heads: dict[ChainKey, tuple[int, str]] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)
    changes: list[dict[str, Any]] = field(default_factory=list)
    results: dict[str, bytes] = field(default_factory=dict)
    outbox: list[dict[str, Any]] = field(default_factory=list)
    pruned: list[int] = field(default_factory=list)


async def write_batch(session: AsyncSession, w: Written) -> list[int]:
    """One statement; the ids of the outbox rows, in the order given.

    The inbox rows are written here, once, each with its command's result, in id order. The
    batch holds its command ids (:data:`HOLD`), so no other transaction records them
    meanwhile; one that does without holding them (an instance of an earlier release, which
    claimed by inserting the row first, during a rolling upgrade) makes the statement record
    fewer rows than asked: the batch raises :class:`common.faults.LostRace`, rolls back
    whole, and its retry finds those commands answered."""
    deltas = [(a, d) for a, d in sorted(w.deltas.items()) if d]
    heads = sorted(w.heads.items())
    results = sorted(w.results.items())
    values: dict[str, Any] = {
        "pruned": w.pruned,
        "refused": w.refused,
        **columns_of(customers, w.customers, "cu", CUSTOMER_COLUMNS),
        **columns_of(journal_entries, w.entries, "e", ENTRY_COLUMNS),
        **columns_of(postings, w.postings, "p", POSTING_COLUMNS),
        "d.id": [a for a, _ in deltas],
        "d.delta": [d for _, d in deltas],
        "h.tenant_id": [k[0] for k, _ in heads],
        "h.mode": [k[1] for k, _ in heads],
        "h.seq": [s for _, (s, _) in heads],
        "h.head_hash": [h for _, (_, h) in heads],
        **columns_of(state_changes, w.changes, "s", CHANGE_COLUMNS),
        "r.id": [c for c, _ in results],
        "r.result": [r for _, r in results],
        **columns_of(outbox, w.outbox, "o", OUTBOX_COLUMNS),
    }
    [row] = await fetch(session, WRITE, _write.args(values))
    if row["recorded"] < len(results):
        raise LostRace(f"{len(results) - row['recorded']} of {len(results)} commands recorded meanwhile")
    return list(row["sent"])

"""The double-entry journal and its chart of accounts (see README.md).

Every movement of money is one journal entry whose postings sum to zero per currency.
Wallet accounts (``<wallet_id>.available`` and ``<wallet_id>.held``) keep their balance in
step with their postings and never go below zero; external accounts
(``ext.<tenant>.<mode>.<currency>.deposits`` and ``.payouts``) are derived from their
postings only, so no tenant-wide hot row is ever locked.

Entries are applied per transaction, the way TigerBeetle applies a batch: commands
:func:`post` entries (or a transfer :meth:`Journal.add` s a refusable movement) into the
transaction's :class:`Journal`, which writes nothing yet. :meth:`Journal.apply`, called once
by the boundary before commit, then

1. creates the external accounts it needs, in id order (one statement);
2. locks every wallet account the transaction touches, ONCE, in id order (one
   ``SELECT ... ORDER BY id FOR UPDATE``): the one global lock order of the ledger, so two
   instances can wait for each other but never deadlock;
3. applies the movements in order on the balances it read, in memory: a movement that would
   take a wallet account below zero is refused alone (``insufficient_funds`` for a transfer),
   the others proceed;
4. writes the entries and postings in bulk and moves each account once by its aggregated
   delta (so a hot wallet costs one row update per batch, not one round trip per transfer).
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session

from common.contracts.base import Mode
from common.errors import ErrorCode, Reason, ServiceError
from common.ids import new_id
from common.metrics import CHAIN_CPU, CHAINED
from ledger import chain
from ledger import repository as repo

Posting = tuple[str, str, Decimal]  # account id, currency, signed amount

SESSION_KEY = "ledger.journal"


def available(wallet_id: str) -> str:
    return f"{wallet_id}.available"


def held(wallet_id: str) -> str:
    return f"{wallet_id}.held"


def external(tenant_id: str, mode: Mode, currency: str, kind: str) -> str:
    return f"ext.{tenant_id}.{mode}.{currency}.{kind}"


def fees(tenant_id: str, mode: Mode, currency: str) -> str:
    """The tenant's developer-fee balance in one currency (GET /v1/fee-balances)."""
    return external(tenant_id, mode, currency, "fees")


def completion(
    tenant_id: str, mode: Mode, source: str, credit: str, currency: str, amount: Decimal, fee: Decimal
) -> list[Posting]:
    """A transfer's held funds leave the source: ``amount - fee`` to ``credit``, the developer
    fee to the tenant's fee balance."""
    postings: list[Posting] = [(held(source), currency, -amount), (credit, currency, amount - fee)]
    if fee:
        postings.append((fees(tenant_id, mode, currency), currency, fee))
    return postings


def is_external(account_id: str) -> bool:
    return account_id.startswith("ext.")


def insufficient_funds(wallet_id: str, needed: Decimal) -> ServiceError:
    return ServiceError(
        ErrorCode.INVALID_REQUEST,
        "insufficient available balance in the source wallet",
        details={"reason": Reason.INSUFFICIENT_FUNDS, "field": "source.amount", "wallet_id": wallet_id},
    )


class UnbalancedEntry(Exception):
    """A programming error: an entry whose postings do not sum to zero."""


class NegativeBalance(Exception):
    """A programming error: a movement that may not be refused would overdraw an account."""


class UnappliedJournal(Exception):
    """A transaction tried to commit with journal entries never applied."""


@dataclass
class Entry:
    id: str
    tenant_id: str
    mode: Mode
    kind: str
    postings: list[Posting]
    transfer_id: str | None = None
    deposit_id: str | None = None


def entry(
    *,
    tenant_id: str,
    mode: Mode,
    kind: str,
    postings: list[Posting],
    transfer_id: str | None = None,
    deposit_id: str | None = None,
) -> Entry:
    """One balanced entry (checked here, before anything is written)."""
    sums: dict[str, Decimal] = defaultdict(Decimal)
    for _, currency, amount in postings:
        sums[currency] += amount
    if any(total != 0 for total in sums.values()) or not postings:
        raise UnbalancedEntry(f"{kind} does not balance: {dict(sums)}")
    return Entry(new_id("je"), tenant_id, mode, kind, postings, transfer_id, deposit_id)


@dataclass
class Movement:
    """Entries applied together or not at all. ``refusable_for`` names the wallet whose
    insufficient funds refuse the movement; ``None``: the movement can never be refused."""

    entries: list[Entry]
    refusable_for: str | None = None
    refused: bool = False


@dataclass
class Journal:
    movements: list[Movement] = field(default_factory=list)
    lock_wait_s: float = 0.0  # time spent in the account-locking statement (contention)

    def add(self, entries: list[Entry], refusable_for: str | None = None) -> Movement:
        move = Movement(entries, refusable_for)
        self.movements.append(move)
        return move

    def mark(self) -> int:
        return len(self.movements)

    def rollback_to(self, mark: int) -> None:
        """Forget what a command rolled back to its savepoint had posted."""
        del self.movements[mark:]

    async def apply(self, session: AsyncSession) -> None:
        """Lock, check, write (see the module docstring); marks refused movements."""
        moves, self.movements = self.movements, []
        if not moves:
            return
        externals: dict[str, dict[str, Any]] = {}
        wallet_accounts: set[str] = set()
        for move in moves:
            for e in move.entries:
                for account_id, currency, _ in e.postings:
                    if is_external(account_id):
                        externals[account_id] = {
                            "id": account_id,
                            "tenant_id": e.tenant_id,
                            "mode": e.mode,
                            "currency": currency,
                            "kind": account_id.rsplit(".", 1)[1],
                        }
                    else:
                        wallet_accounts.add(account_id)
        await repo.ensure_external_accounts(session, list(externals.values()))
        started = time.perf_counter()
        balances = await repo.lock_accounts(session, sorted(wallet_accounts))
        self.lock_wait_s += time.perf_counter() - started
        if unknown := wallet_accounts - balances.keys():
            raise LookupError(f"wallet accounts not found: {sorted(unknown)}")
        deltas: dict[str, Decimal] = defaultdict(Decimal)
        accepted: list[Entry] = []
        for move in moves:
            if _try(move, balances, deltas):
                accepted.extend(move.entries)
            elif move.refusable_for is None:
                raise NegativeBalance(f"{[e.kind for e in move.entries]} would overdraw an account")
            else:
                move.refused = True
        now = datetime.now(UTC)
        rows = await self._chained(session, accepted, now)
        await repo.insert_entries(
            session,
            rows,
            [
                {"entry_id": e.id, "account_id": a, "currency": c, "amount": amt}
                for e in accepted
                for a, c, amt in e.postings
            ],
        )
        await repo.add_to_balances(session, deltas)

    async def _chained(
        self, session: AsyncSession, accepted: list[Entry], now: datetime
    ) -> list[dict[str, Any]]:
        """The rows of the accepted entries, each linked into its tenant's and mode's hash chain
        (``ledger.chain``): the heads are locked (after the accounts, in key order), extended
        in batch order and moved, in two statements whatever the batch size."""
        if not accepted:
            return []
        heads = await repo.lock_chains(session, sorted({(e.tenant_id, e.mode) for e in accepted}))
        started = time.thread_time()
        rows = []
        for e in accepted:
            seq, previous = heads[(e.tenant_id, e.mode)]
            text = chain.canonical(
                e.id,
                e.tenant_id,
                e.mode,
                e.kind,
                e.transfer_id,
                e.deposit_id,
                now,
                [(a, x) for a, _, x in e.postings],
            )
            heads[(e.tenant_id, e.mode)] = (seq + 1, chain.link(previous, text))
            rows.append(
                {
                    "id": e.id,
                    "tenant_id": e.tenant_id,
                    "mode": e.mode,
                    "kind": e.kind,
                    "transfer_id": e.transfer_id,
                    "deposit_id": e.deposit_id,
                    "created_at": now,
                    "seq": seq + 1,
                    "hash": heads[(e.tenant_id, e.mode)][1],
                }
            )
        CHAIN_CPU.inc(time.thread_time() - started)
        CHAINED.inc(len(rows))
        await repo.save_chains(session, heads)
        return rows


def _try(move: Movement, balances: dict[str, Decimal], deltas: dict[str, Decimal]) -> bool:
    """Apply a movement's entries one after the other on the in-memory balances; undo and
    say False when one would leave a wallet account below zero."""
    done: list[Posting] = []
    for e in move.entries:
        for posting in e.postings:
            account_id, _, amount = posting
            if not is_external(account_id):
                balances[account_id] += amount
                done.append(posting)
        if any(balances[a] < 0 for a, _, _ in e.postings if not is_external(a)):
            for account_id, _, amount in done:
                balances[account_id] -= amount
            return False
    for account_id, _, amount in done:
        deltas[account_id] += amount
    return True


def of(session: AsyncSession) -> Journal:
    """The journal of the session's current transaction."""
    found = session.info.get(SESSION_KEY)
    if found is None:
        found = session.info[SESSION_KEY] = Journal()
    assert isinstance(found, Journal)
    return found


async def apply(session: AsyncSession) -> None:
    """Apply what the session's transaction posted: the boundary calls this before commit."""
    found = session.info.get(SESSION_KEY)
    if found is not None:
        await found.apply(session)


async def post(session: AsyncSession, e: Entry) -> str:
    """Post one balanced entry (built by :func:`entry`) that may not be refused (deposits,
    settlements, releases) to the session's journal; it is written when the boundary applies
    the journal."""
    of(session).add([e])
    return e.id


@event.listens_for(Session, "before_commit")
def _refuse_unapplied(session: Session) -> None:
    """Money posted and never applied must not vanish silently (savepoints may commit)."""
    found = session.info.get(SESSION_KEY)
    if found is not None and found.movements and not session.in_nested_transaction():
        raise UnappliedJournal(f"{len(found.movements)} journal movements were never applied")

"""The double-entry journal and its chart of accounts (see README.md).

Every movement of money is one journal entry whose postings sum to zero per currency.
Wallet accounts (``<wallet_id>.available`` and ``<wallet_id>.held``) keep their balance in
step with their postings and never go below zero; external accounts
(``ext.<tenant>.<mode>.<currency>.deposits`` and ``.payouts``) are derived from their
postings only, so no tenant-wide hot row is ever locked.

Entries are applied per transaction, the way TigerBeetle applies a batch: commands
:func:`post` entries (or a transfer :meth:`Journal.add` s a refusable movement) into the
transaction's :class:`Journal`, which writes nothing yet. The boundary then, once per batch,

1. :meth:`Journal.lock`: in ONE statement (``repository.batch.lock_batch``) creates the
   external accounts it needs (id order), locks every wallet account the transaction touches,
   ONCE, in id order (``SELECT ... ORDER BY id FOR UPDATE``: the one global lock order of the
   ledger, so two instances can wait for each other but never deadlock) and the chain heads
   after them, in key order;
2. :meth:`Journal.check`: applies the movements in order on the balances it read, in
   memory: a movement that would take a wallet account below zero is refused alone
   (``insufficient_funds`` for a transfer), the others proceed; chains the accepted entries;
3. writes the entries and postings in bulk and moves each account once by its aggregated
   delta (so a hot wallet costs one row update per batch, not one round trip per transfer),
   in the batch's one write statement (``repository.batch.write_batch``) with the rest of
   the batch. :meth:`Journal.apply` runs the three for callers outside a batch.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
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
    transfer: str | None = None  # the transfer's terms as the chain covers them (chain.transfer_text)


def entry(
    *,
    tenant_id: str,
    mode: Mode,
    kind: str,
    postings: list[Posting],
    transfer_id: str | None = None,
    deposit_id: str | None = None,
    transfer: Mapping[str, Any] | None = None,
) -> Entry:
    """One balanced entry (checked here, before anything is written). An entry of a transfer
    gives the transfer's row (``transfer``): its terms are in the entry's hash."""
    if (transfer_id is None) != (transfer is None):
        raise ValueError(f"{kind}: an entry of a transfer names the transfer's id and its row")
    sums: dict[str, Decimal] = defaultdict(Decimal)
    for _, currency, amount in postings:
        sums[currency] += amount
    if any(total != 0 for total in sums.values()) or not postings:
        raise UnbalancedEntry(f"{kind} does not balance: {dict(sums)}")
    terms = chain.transfer_text(transfer) if transfer is not None else None
    return Entry(new_id("je"), tenant_id, mode, kind, postings, transfer_id, deposit_id, terms)


@dataclass
class Movement:
    """Entries applied together or not at all. ``refusable_for`` names the wallet whose
    insufficient funds refuse the movement; ``None``: the movement can never be refused."""

    entries: list[Entry]
    refusable_for: str | None = None
    refused: bool = False


ChainKey = tuple[str, str]


@dataclass
class Journal:
    movements: list[Movement] = field(default_factory=list)
    lock_wait_s: float = 0.0  # time spent in the account-locking statement (contention)
    locked: repo.Locked | None = None  # what :meth:`lock` read, until :meth:`check` uses it
    posted: repo.Written | None = None  # what the batch decided, until its write statement

    def add(self, entries: list[Entry], refusable_for: str | None = None) -> Movement:
        move = Movement(entries, refusable_for)
        self.movements.append(move)
        return move

    def mark(self) -> int:
        return len(self.movements)

    def rollback_to(self, mark: int) -> None:
        """Forget what a command rolled back to its savepoint had posted."""
        del self.movements[mark:]

    def drop(self, move: Movement) -> None:
        """Take back a movement that turned out not to be this batch's (a concurrent twin)."""
        self.movements = [m for m in self.movements if m is not move]

    async def lock(self, session: AsyncSession, new_transfers: Sequence[dict[str, Any]] = ()) -> set[str]:
        """Steps 1 and 2 of the module docstring in one statement, after inserting
        ``new_transfers`` (their insert waits for a concurrent twin before any account is
        locked): the ids of the transfers inserted."""
        externals: dict[str, dict[str, Any]] = {}
        wallet_accounts: set[str] = set()
        chains: set[ChainKey] = set()
        for move in self.movements:
            for e in move.entries:
                chains.add((e.tenant_id, e.mode))
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
        if self.posted is not None and self.posted.entries:  # balances read now would miss them
            raise UnappliedJournal("write what the journal checked before locking again")
        if not self.movements and not new_transfers:
            return set()
        started = time.perf_counter()
        self.locked = await repo.lock_batch(
            session, new_transfers, list(externals.values()), sorted(wallet_accounts), sorted(chains)
        )
        self.lock_wait_s += time.perf_counter() - started
        if unknown := wallet_accounts - self.locked.balances.keys():
            raise LookupError(f"wallet accounts not found: {sorted(unknown)}")
        return self.locked.inserted

    def check(self) -> None:
        """Steps 3 and 4 in memory: refuse what would overdraw, chain the accepted entries;
        what to write waits in :attr:`posted` for the batch's write statement."""
        moves, self.movements = self.movements, []
        locked, self.locked = self.locked, None
        if not moves:
            return
        if locked is None:
            raise UnappliedJournal(f"{len(moves)} journal movements were checked before being locked")
        balances = dict(locked.balances)
        deltas: dict[str, Decimal] = defaultdict(Decimal)
        accepted: list[Entry] = []
        for move in moves:
            if _try(move, balances, deltas):
                accepted.extend(move.entries)
            elif move.refusable_for is None:
                raise NegativeBalance(f"{[e.kind for e in move.entries]} would overdraw an account")
            else:
                move.refused = True
        posted = self.writes()
        posted.entries.extend(self._chained(accepted, locked.heads, posted.heads, datetime.now(UTC)))
        posted.postings.extend(
            {"entry_id": e.id, "account_id": a, "currency": c, "amount": amt}
            for e in accepted
            for a, c, amt in e.postings
        )
        for account_id, delta in deltas.items():
            posted.deltas[account_id] = posted.deltas.get(account_id, Decimal(0)) + delta

    def writes(self) -> repo.Written:
        """What the transaction's write statement will write, filled as the batch decides
        (journal rows here; customers, state changes, refused transfers by their modules)."""
        if self.posted is None:
            self.posted = repo.Written()
        return self.posted

    def take(self) -> repo.Written:
        """What :meth:`check` left to write (the boundary adds the rest of the batch to it)."""
        posted, self.posted = self.posted or repo.Written(), None
        return posted

    async def apply(self, session: AsyncSession) -> None:
        """Lock, check and write in three statements (outside the consumer's batch: the
        sandbox simulator); marks refused movements."""
        if not self.movements:
            return
        await self.lock(session)
        self.check()
        await repo.write_batch(session, self.take())

    @staticmethod
    def _chained(
        accepted: list[Entry],
        locked: dict[ChainKey, tuple[int, str]],
        moved: dict[ChainKey, tuple[int, str]],
        now: datetime,
    ) -> list[dict[str, Any]]:
        """The rows of the accepted entries, each linked into its tenant's and mode's hash chain
        (``ledger.chain``), extended in batch order from the locked heads (or from where an
        earlier check of the same transaction left them: ``moved``, updated)."""
        if not accepted:
            return []
        started = time.thread_time()
        rows = []
        for e in accepted:
            key = (e.tenant_id, e.mode)
            seq, previous = moved.get(key) or locked[key]
            text = chain.canonical_v2(
                e.id, e.tenant_id, e.mode, e.kind, e.transfer_id, e.deposit_id, now, e.postings, e.transfer
            )
            moved[key] = (seq + 1, chain.link(previous, text))
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
                    "hash": moved[key][1],
                }
            )
        CHAIN_CPU.inc(time.thread_time() - started)
        CHAINED.inc(len(rows))
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
    if found is None or session.in_nested_transaction():
        return
    if found.movements:
        raise UnappliedJournal(f"{len(found.movements)} journal movements were never applied")
    if found.posted is not None:
        raise UnappliedJournal("applied journal entries were never written")

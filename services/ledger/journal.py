"""The transaction's journal: the shell around the core's entries (``ledger.core.entries``).

Every movement of money is one journal entry whose postings sum to zero per currency (the
chart of accounts: ``ledger.core.accounts``). Entries are applied per transaction, the way
TigerBeetle applies a batch: the boundary that owns the transaction opens its
:class:`Journal` (:meth:`Journal.begin`) and hands it to every command that moves money, which
:meth:`Journal.add` s its entries (a transfer a refusable movement); nothing is written yet.
The boundary then, once per batch,

1. :meth:`Journal.lock`: in ONE statement (``repository.batch.lock_batch``) creates the
   external accounts it needs (id order), locks every wallet account the transaction touches,
   ONCE, in id order (``SELECT ... ORDER BY id FOR UPDATE``: the one global lock order of the
   ledger, so two instances can wait for each other but never deadlock) and the chain heads
   after them, in key order;
2. :meth:`Journal.check`: the core decides on the balances and heads it read, in memory
   (``entries.check_funds``: a movement that would take a wallet account below zero is
   refused alone, ``insufficient_funds`` for a transfer, the others proceed;
   ``entries.chain_rows``: the accepted entries chained);
3. writes the entries and postings in bulk and moves each account once by its aggregated
   delta (so a hot wallet costs one row update per batch, not one round trip per transfer),
   in the batch's one write statement (``repository.batch.write_batch``) with the rest of
   the batch. :meth:`Journal.apply` runs the three for callers outside a batch.

:meth:`Journal.begin` also registers the journal with its session, so that a commit with movements
never applied, or applied and never written, is refused (``UnappliedJournal``) whoever forgot.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session

from common.metrics import CHAIN_CPU, CHAINED
from ledger import repository as repo
from ledger.core import entries
from ledger.core.entries import Entry, Movement

SESSION_KEY = "ledger.journal"


class UnappliedJournal(Exception):
    """A transaction tried to commit with journal entries never applied."""


@dataclass
class Journal:
    movements: list[Movement] = field(default_factory=list)
    lock_wait_s: float = 0.0  # time spent in the account-locking statement (contention)
    locked: repo.Locked | None = None  # what :meth:`lock` read, until :meth:`check` uses it
    posted: repo.Written | None = None  # what the batch decided, until its write statement

    @classmethod
    def begin(cls, session: AsyncSession) -> Journal:
        """A new journal for the session's transaction, handed by the boundary that owns the
        transaction to the code that posts; registered with the session so that the commit
        guard (:func:`_refuse_unapplied`) sees what it holds (it replaces the journal of a
        transaction the session rolled back)."""
        opened = session.info[SESSION_KEY] = cls()
        return opened

    def add(self, posted: list[Entry], refusable_for: str | None = None) -> Movement:
        """Post entries applied together (``refusable_for``: the wallet whose insufficient
        funds refuse them all; None: they may never be refused, like a deposit or a release)."""
        move = Movement(posted, refusable_for)
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
        """Step 1 of the module docstring in one statement, after inserting
        ``new_transfers`` (their insert waits for a concurrent twin before any account is
        locked): the ids of the transfers inserted."""
        plan = entries.plan_locks(self.movements)
        if self.posted is not None and self.posted.entries:  # balances read now would miss them
            raise UnappliedJournal("write what the journal checked before locking again")
        if not self.movements and not new_transfers:
            return set()
        started = time.perf_counter()
        self.locked = await repo.lock_batch(
            session,
            new_transfers,
            list(plan.externals.values()),
            sorted(plan.wallet_accounts),
            sorted(plan.chains),
        )
        self.lock_wait_s += time.perf_counter() - started
        if unknown := plan.wallet_accounts - self.locked.balances.keys():
            raise LookupError(f"wallet accounts not found: {sorted(unknown)}")
        return self.locked.inserted

    def check(self) -> None:
        """Step 2 in memory, decided by the core: refuse what would overdraw, chain the
        accepted entries; what to write waits in :attr:`posted` for the batch's write statement."""
        moves, self.movements = self.movements, []
        locked, self.locked = self.locked, None
        if not moves:
            return
        if locked is None:
            raise UnappliedJournal(f"{len(moves)} journal movements were checked before being locked")
        funded = entries.check_funds(moves, locked.balances)
        posted = self.writes()
        posted.entries.extend(self._chained(funded.accepted, locked.heads, posted.heads))
        posted.postings.extend(entries.posting_rows(funded.accepted))
        for account_id, delta in funded.deltas.items():
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
        locked: dict[entries.ChainKey, entries.Head],
        moved: dict[entries.ChainKey, entries.Head],
    ) -> list[dict[str, Any]]:
        """The core's chained rows of the accepted entries, stamped now, with the CPU the
        chain costs counted (``sluice_journal_chain_cpu_seconds_total``)."""
        if not accepted:
            return []
        started = time.thread_time()
        rows = entries.chain_rows(accepted, locked, moved, datetime.now(UTC))
        CHAIN_CPU.inc(time.thread_time() - started)
        CHAINED.inc(len(rows))
        return rows


@event.listens_for(Session, "before_commit")
def _refuse_unapplied(session: Session) -> None:
    """Money posted and never applied must not vanish silently (savepoints may commit): a
    safety net under the boundary, which applies and writes the journal it began."""
    found = session.info.get(SESSION_KEY)
    if found is None or session.in_nested_transaction():
        return
    if found.movements:
        raise UnappliedJournal(f"{len(found.movements)} journal movements were never applied")
    if found.posted is not None:
        raise UnappliedJournal("applied journal entries were never written")

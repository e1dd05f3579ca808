"""The sandbox simulator: advances due sandbox transfers and payouts, one step at a time.

Runs in every ledger process. ``SELECT ... FOR UPDATE SKIP LOCKED`` hands each due row to
exactly one instance; every step goes through ``states.transition`` and its event leaves
through the outbox. The money of a pass is applied once through the journal (accounts
locked once, in id order), like a batch of commands. Production rows are never due
(``next_step_at`` stays NULL there).
"""

from __future__ import annotations

import asyncio
import logging

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from common.authority import SigningKey
from common.errors import ErrorCode, ServiceError
from common.outbox import Outbox
from common.topics import Topics
from ledger import repository as repo
from ledger import service
from ledger.config import LedgerConfig
from ledger.core.states import simulated_next
from ledger.journal import Journal
from ledger.states import transition

log = logging.getLogger(__name__)


class Simulator:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        outbox: Outbox,
        topics: Topics,
        ledger_config: LedgerConfig,
        signing_key: SigningKey,
        *,
        poll_s: float = 0.2,
        batch: int = 50,
    ) -> None:
        self.sessions, self.outbox, self.topics, self.ledger_config = sessions, outbox, topics, ledger_config
        self.signing_key = signing_key  # the ledger's: its events carry its signature
        self.poll_s, self.batch = poll_s, batch
        self.steps = 0
        self.due_in: float | None = None  # seconds to the next scheduled step, after an idle pass

    async def step_once(self) -> int:
        async with self.sessions() as session:
            async with session.begin():
                due = await repo.due_transfers(session, self.batch)
                self.due_in = None if due else await repo.next_due_in(session)
                events = []
                journal = Journal.begin(session)
                for t in due:
                    to = simulated_next(t)
                    mark = journal.mark()
                    try:
                        if to is None:
                            raise ServiceError(ErrorCode.INTERNAL_ERROR, f"nothing to do in {t.state}")
                        async with session.begin_nested():
                            _, ev = await transition(
                                session,
                                journal,
                                t,
                                to,
                                cause="sandbox_simulator",
                                ledger_config=self.ledger_config,
                            )
                        events.append(ev)
                    except ServiceError:
                        journal.rollback_to(mark)
                        log.exception("simulator could not advance %s; unscheduled", t.id)
                        await repo.unschedule(session, t.id)
                # Every account of the pass locked once, in id order, and moved once.
                await journal.apply(session)
                service.stage_events(session, self.outbox, self.topics, events, self.signing_key)
                msgs = await self.outbox.write(session)
            await self.outbox.dispatch(self.sessions, msgs, Outbox.pruned(session))
        self.steps += len(events)
        return len(due)

    async def run_forever(self) -> None:
        """Step forever; a failed step raises (the supervisor restarts it with backoff)."""
        while True:
            busy = await self.step_once()
            if not busy:
                await asyncio.sleep(self.pause())

    def pause(self) -> float:
        """How long an idle pass sleeps: until the earliest scheduled step, never under
        ``poll_s``, at most half a settle. A step scheduled after this look is due a settle
        after its transaction planned it (``states.next_step_s``), so half a settle wakes in
        time even for one whose transaction was still open. An idle ledger looks twice a
        settle (once a second) instead of five times a second, each look a transaction."""
        ceiling = max(self.poll_s, self.ledger_config.settle_s / 2)
        if self.due_in is None:
            return ceiling
        return min(ceiling, max(self.poll_s, self.due_in))

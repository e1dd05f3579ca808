"""Transfers and payouts, applied a batch at a time: the shell around ``ledger.core.transfers``.

What the batch's first statement must read for its transfers (:func:`names`: their
idempotency keys, the wallets they name) is said here; the core decides the batch from what
it read (:func:`prepare_transfers` hands its movements to the transaction's journal, whose
lock statement inserts the planned rows, so a concurrent twin of an idempotency key is found
before any money moves); a transfer that lost its key to a concurrent transaction answers the
row that transaction committed (:func:`answer_concurrent_twins`, one read); once the journal
checked the funds, :func:`finish_transfers` adds what the core decided to the batch's write
statement (the rows of the transfers refused for insufficient funds taken back, the state
changes of the others) and answers each command. An operator's review of a stored transfer
goes through ``states.transition``.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from datetime import UTC, datetime

from sqlalchemy.ext.asyncio import AsyncSession

from common.contracts.commands import CreateTransfer, ReviewTransfer
from common.errors import ServiceError
from ledger import repository as repo
from ledger.config import LedgerConfig
from ledger.core.effects import Effects
from ledger.core.events import transfer_view
from ledger.core.transfers import (
    Key,
    Planned,
    Prepared,
    key_of,
    lost_to_twins,
    movements,
    plan_transfers,
    replay_concurrent,
    settle_transfers,
)
from ledger.journal import Journal
from ledger.models import Transfer, Wallet
from ledger.states import lock_for_operator, transition

log = logging.getLogger(__name__)


def names(cmds: Sequence[CreateTransfer]) -> tuple[list[Key], repo.WalletNames]:
    """What the batch's first statement reads for these transfers: their idempotency keys and
    the wallets they name (by id, deposit address or owning customer)."""
    found = repo.WalletNames()
    for c in cmds:
        found.tenant_ids.add(c.ctx.tenant_id)
        for wallet_id in (c.source.provider_wallet_id, c.destination.provider_wallet_id):
            if wallet_id:
                found.ids.add(wallet_id)
        if c.destination.address:
            found.addresses.add(c.destination.address)
        if c.source.customer_id and c.source.payment_rail.lower() == "stablecoin":
            found.customer_ids.add(c.source.customer_id)
    return [key_of(c) for c in cmds], found


def prepare_transfers(
    journal: Journal,
    cmds: Sequence[CreateTransfer],
    ledger_config: LedgerConfig,
    known: Sequence[Transfer],
    wallets: Sequence[Wallet],
    taken: Collection[str] = frozenset(),
) -> list[Prepared]:
    """The core's plan of a batch of transfers from what the batch's first statement read
    (``known``, ``wallets``, the transfer ids ``taken``), their movements posted in order to
    ``journal``, whose lock statement inserts their rows (``core.transfers.new_rows``): no
    statement of its own."""
    prepared = plan_transfers(cmds, known, wallets, ledger_config.settle_s, datetime.now(UTC), taken)
    journal.movements.extend(movements(prepared))
    return prepared


async def answer_concurrent_twins(
    session: AsyncSession, journal: Journal, prepared: list[Prepared], inserted: set[str]
) -> None:
    """A transfer whose idempotency key another transaction committed meanwhile (the insert
    waited for it) answers that transfer, as a replay; its movement leaves the journal."""
    lost = lost_to_twins(prepared, inserted)
    if not lost:
        return
    for p in lost.values():
        journal.drop(p.move)
    rows = await repo.transfers_by_idempotency_key(session, [key_of(p.cmd) for p in lost.values()])
    replay_concurrent(prepared, lost, rows)
    log.info("%d transfers answered a concurrent twin of their idempotency key", len(lost))


def finish_transfers(journal: Journal, prepared: list[Prepared]) -> list[Effects | ServiceError]:
    """After the journal was checked: what the core decided goes to the batch's write (the
    rows of refused transfers taken back: rare, only an overdraft; the state changes of the
    accepted ones); each command's answer (its effects, or why it was refused)."""
    settled = settle_transfers(prepared)
    writes = journal.writes()
    writes.refused.extend(settled.refused)
    writes.changes.extend(settled.changes)
    planned = sum(isinstance(p, Planned) for p in prepared)
    if planned:
        log.info(
            "transfers applied: %d accepted, %d refused for funds",
            planned - len(settled.refused),
            len(settled.refused),
        )
    return settled.answers


async def review_transfer(
    session: AsyncSession, journal: Journal, cmd: ReviewTransfer, ledger_config: LedgerConfig
) -> Effects:
    """An operator's decision on an ``in_review`` transfer or payout."""
    t = await lock_for_operator(session, cmd.transfer_id, cmd.ctx)
    request_id, events = cmd.ctx.request_id, []
    if cmd.decision == "reject":
        t, event = await transition(
            session,
            journal,
            t,
            "rejected",
            cause="operator_reject",
            ledger_config=ledger_config,
            request_id=request_id,
        )
        events.append(event)
    else:
        t, event = await transition(
            session,
            journal,
            t,
            "processing",
            cause="operator_approve",
            ledger_config=ledger_config,
            request_id=request_id,
        )
        events.append(event)
        if t.route == "book":
            t, event = await transition(
                session,
                journal,
                t,
                "completed",
                cause="book_settlement",
                ledger_config=ledger_config,
                request_id=request_id,
            )
            events.append(event)
    effects = Effects(200, transfer_view(t))
    effects.events.extend(events)
    return effects

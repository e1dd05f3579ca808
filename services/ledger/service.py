"""Ledger commands: each becomes state changes, a result and events.

Functions take the session and never commit; the message boundary (``handlers``) owns the
transaction, begins its journal (``journal.Journal.begin``) and dispatches the outbox after
commit. The command modules register themselves in ``WRITES`` (given the transaction's
journal: only they may move money) or ``READS`` (given none). The decisions without I/O are
the core's (``ledger.core``): the transfers of a batch are planned there, in memory.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, cast

import msgspec
from sqlalchemy.ext.asyncio import AsyncSession

from common.authority import SigningKey
from common.contracts import Envelope, Result, encode
from common.contracts.base import ErrorBody, Event
from common.contracts.commands import (
    RELEASE_PREFIX,
    CreateCustomer,
    CreateTransfer,
    CreateVirtualAccount,
    CreateWallet,
    GetFeeBalances,
    GetResource,
    ListResources,
    ListWalletTransactions,
    Reconcile,
    ReleaseAllowance,
    ReviewTransfer,
    SandboxDeposit,
    SettleTransfer,
    VerifyJournal,
)
from common.contracts.events import AnyEvent, EventBatch
from common.errors import ErrorCode, Reason, ServiceError
from common.outbox import Outbox, OutMessage
from common.topics import Topics
from ledger import (
    customers,
    deposits,
    fees,
    reads,
    reconcile,
    statements,
    transfers,
    verification,
    virtual_accounts,
    wallets,
    withdrawals,
)
from ledger import repository as repo
from ledger.config import LedgerConfig
from ledger.core.effects import Effects
from ledger.core.transfers import new_rows
from ledger.journal import Journal

log = logging.getLogger(__name__)

# Writes: ``(session, journal, cmd, ledger_config) -> Effects``. A batch's customers and
# transfers are applied together instead (``execute_writes``); these handlers serve the rest.
WRITES: dict[type, Any] = {
    CreateCustomer: customers.create_customer,
    CreateWallet: wallets.create_wallet,
    CreateVirtualAccount: virtual_accounts.create_virtual_account,
    SandboxDeposit: deposits.sandbox_deposit,
    ReviewTransfer: transfers.review_transfer,
    SettleTransfer: withdrawals.settle_transfer,
}

# Reads: ``(session, cmd, ledger_config) -> Effects``. They change nothing: no journal, no inbox
# record, no outbox row; their answer is published after the batch commits, and a redelivered
# read is simply answered again.
READS: dict[type, Any] = {
    GetResource: reads.get_resource,
    ListResources: reads.list_resources,
    GetFeeBalances: fees.fee_balances,
    ListWalletTransactions: statements.wallet_transactions,
    Reconcile: reconcile.reconcile,
    VerifyJournal: verification.verify_journal,
}


def is_read(cmd: Envelope) -> bool:
    return isinstance(cmd, tuple(READS))


def _unsupported(cmd: Envelope) -> ServiceError:
    return ServiceError(ErrorCode.INVALID_REQUEST, f"unsupported command {type(cmd).__name__}")


async def execute(session: AsyncSession, cmd: Envelope, ledger_config: LedgerConfig) -> Effects:
    """Answer a read."""
    handler = READS.get(type(cmd))
    if handler is None:
        raise _unsupported(cmd)
    return await handler(session, cmd, ledger_config)


async def execute_write(
    session: AsyncSession, journal: Journal, cmd: Envelope, ledger_config: LedgerConfig
) -> Effects:
    """Execute one write; the money it moves is posted to ``journal``."""
    handler = WRITES.get(type(cmd))
    if handler is None:
        raise _unsupported(cmd)
    return await handler(session, journal, cmd, ledger_config)


#: What one command's handler gave: its effects, or the refusal that took it back.
Handled = tuple[Effects | None, ServiceError | None]


async def execute_writes(
    session: AsyncSession,
    journal: Journal,
    cmds: Sequence[Envelope],
    ledger_config: LedgerConfig,
    claimed: repo.Claimed,
) -> list[Handled]:
    """Execute a batch of write commands in one transaction; outcomes in command order.

    Customers are added to the batch's write statement (without a savepoint: a failure there
    fails the batch, which the consumer then retries command by command). Every other command
    but the transfers runs under its own savepoint and posts its entries to ``journal``, the
    transaction's. The transfers of the batch are planned in memory by the core from what the
    batch's first statement read (``claimed``) and each adds a refusable movement to the
    journal. The journal then locks once (:meth:`Journal.lock`: the new transfer rows inserted,
    every wallet account of the batch locked once, in id order, in one statement) and checks
    the funds in order in memory; the transfers refused for funds are taken back and the state
    changes of the others added to the batch's write statement, which the boundary sends.
    Nothing waits on a lock while holding an account lock, so two ledger instances never
    deadlock.
    """
    out: list[Handled | None] = [None] * len(cmds)
    queued = [(i, c) for i, c in enumerate(cmds) if isinstance(c, CreateCustomer)]
    moving = [(i, c) for i, c in enumerate(cmds) if isinstance(c, CreateTransfer)]
    if queued:
        done = customers.create_customers(journal, [c for _, c in queued])
        for (i, _), effects in zip(queued, done, strict=True):
            out[i] = (effects, None)
    for i, cmd in enumerate(cmds):
        if out[i] is not None or isinstance(cmd, CreateTransfer):
            continue
        mark = journal.mark()
        try:
            async with session.begin_nested():
                out[i] = (await execute_write(session, journal, cmd, ledger_config), None)
        except ServiceError as exc:
            journal.rollback_to(mark)
            out[i] = (None, exc)
    prepared = transfers.prepare_transfers(
        journal, [c for _, c in moving], ledger_config, claimed.known, claimed.wallets, claimed.taken
    )
    inserted = await journal.lock(session, new_rows(prepared))
    await transfers.answer_concurrent_twins(session, journal, prepared, inserted)
    journal.check()
    finished = transfers.finish_transfers(journal, prepared)
    for (i, _), outcome in zip(moving, finished, strict=True):
        out[i] = (None, outcome) if isinstance(outcome, ServiceError) else (outcome, None)
    return [o for o in out if o is not None]


async def claim(session: AsyncSession, cmds: Sequence[Envelope]) -> repo.Claimed:
    """The batch's first statements: ``cmds`` (distinct writes) held for the transaction (a
    command redelivered to two instances at once makes one wait for the other), then what
    the inbox answered before for them and what their transfers name. The inbox rows are
    written once, with their results, by the batch's last statement (:func:`write`)."""
    moving = [c for c in cmds if isinstance(c, CreateTransfer)]
    keys, names = transfers.names(moving)
    ids = [c.transfer_id for c in moving]
    return await repo.claim_batch(session, [c.command_id for c in cmds], keys, names, ids)


async def write(
    session: AsyncSession, journal: Journal, results: dict[str, bytes], outbox: Outbox
) -> list[OutMessage]:
    """The batch's last statement: what the batch decided (``journal``'s rows, customers,
    state changes), the inbox results and the outbox rows staged so far (and the deletion of
    rows published earlier). Returns the messages written, for dispatch after commit."""
    writes = journal.take()
    writes.results = results
    msgs, writes.pruned = outbox.staged(session)
    # the answers the inbox keeps are not among them: published after commit, no row (Outbox)
    writes.outbox = [
        {"topic": m.topic, "key": m.key, "partition": m.partition, "payload": m.payload} for m in msgs
    ]
    ids = await repo.write_batch(session, writes)
    return outbox.written(session, msgs, ids, writes.pruned)


def result_of(cmd: Envelope, effects: Effects | None, err: ServiceError | None) -> Result:
    if err is not None:
        return Result(
            command_id=cmd.command_id,
            request_id=cmd.ctx.request_id,
            status=err.status,
            error=ErrorBody(code=err.code, message=err.message, details=err.details),
        )
    assert effects is not None
    return Result(
        command_id=cmd.command_id, request_id=cmd.ctx.request_id, status=effects.status, data=effects.data
    )


def stage_events(
    session: AsyncSession, outbox: Outbox, topics: Topics, events: list[Event], key: SigningKey
) -> None:
    """Each event in a record of its own (the sandbox simulator: one step of one transfer each),
    signed with the ledger's ``key``: webhooks and compliance act only on what it signed."""
    for ev in events:
        signed = key.sign(ev)
        outbox.add(
            session,
            OutMessage(topics.events, encode(signed), key=ev.tenant_id.encode(), request_id=ev.request_id),
        )


def stage_fact(
    session: AsyncSession, outbox: Outbox, topics: Topics, events: list[Event], key: SigningKey
) -> None:
    """The events one command produced, in ONE record (one record per fact, not per event, when
    a command produces several), encoded and signed once; a single event, as a book transfer's
    ``transfer.created`` now is, as itself."""
    if len(events) < 2:
        stage_events(session, outbox, topics, events, key)
        return
    first = events[0]
    # The ledger's events are domain events (``AnyEvent``) by construction (``Effects.emit``).
    batch = key.sign(EventBatch(tenant_id=first.tenant_id, events=cast("list[AnyEvent]", list(events))))
    outbox.add(
        session,
        OutMessage(topics.events, encode(batch), key=first.tenant_id.encode(), request_id=first.request_id),
    )


def allowance_release(
    cmd: Envelope, topics: Topics, key: SigningKey, err: ServiceError | None = None
) -> OutMessage | None:
    """For a transfer compliance approved that the ledger refused or failed: the message that
    gives its daily-cap allowance back (docs/failure-model.md, "Cap allowances"), named after
    the command that failed, whose hold alone it gives back. None for anything else, and for a
    transfer id another transfer holds (``err``): what is held under that id is not this
    command's."""
    if not isinstance(cmd, CreateTransfer) or cmd.decision is None:
        return None
    if err is not None and err.details.get("reason") == Reason.TRANSFER_ID_REUSED:
        return None
    release = ReleaseAllowance(
        command_id=f"{RELEASE_PREFIX}{cmd.command_id}",
        ctx=msgspec.structs.replace(cmd.ctx, reply_to=None, idempotency_key=None),
        transfer_id=cmd.transfer_id,
    )
    release = key.sign(release)  # compliance gives back only what the ledger signed
    return OutMessage(
        topics.compliance_releases,
        encode(release),
        key=cmd.ctx.tenant_id.encode(),
        request_id=cmd.ctx.request_id,
    )


__all__ = [
    "Effects",
    "Handled",
    "LedgerConfig",
    "allowance_release",
    "claim",
    "execute",
    "execute_write",
    "execute_writes",
    "is_read",
    "result_of",
    "stage_events",
    "stage_fact",
    "write",
]

"""Transfers and payouts, applied a batch at a time (the TigerBeetle way).

:func:`prepare_transfers` validates the transfers of a batch and resolves their parties with
batched reads (the known idempotency keys in one query, every wallet in one query), inserts
their rows in one statement (so a concurrent twin of an idempotency key is found before any
money moves, and answered as a replay), then adds one refusable movement per transfer to the
transaction's journal: the hold, and for a ``book`` transfer its settlement too. The
boundary applies the journal once (every touched wallet account locked once, in id order;
the funds checked in order, in memory) and then :func:`finish_transfers` deletes the rows of
the transfers refused for insufficient funds (each refused alone), inserts the state changes
of the others in bulk and answers each command.

Routes: ``book`` (settles at once -> completed), ``onchain``, ``external`` (a withdrawal out
of the suite, see :mod:`ledger.withdrawals`) and ``payout`` (-> pending, advanced
asynchronously). A command stamped by compliance with ``decision.outcome ==
"review"`` waits in ``in_review`` with its funds held.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from types import SimpleNamespace
from typing import Any

import msgspec
from sqlalchemy.ext.asyncio import AsyncSession

from common.contracts.base import Event
from common.contracts.commands import CreateTransfer, ReviewTransfer
from common.contracts.events import PayoutCreated, TransferCreated
from common.errors import ErrorCode, ServiceError, forbidden, invalid
from common.money import STABLECOIN_PLACES, TRANSFER_CURRENCIES
from ledger import fees, journal, parties, views, withdrawals
from ledger import repository as repo
from ledger.effects import Effects, LedgerConfig, parse_amount
from ledger.models import Transfer, Wallet
from ledger.states import (
    check_path,
    lock_for_operator,
    next_step_s,
    transfer_event,
    transition,
    updated_event,
)

log = logging.getLogger(__name__)

Key = tuple[str, str, str]  # tenant, mode, idempotency key


@dataclass
class Planned:
    """An accepted-so-far transfer: its row (in its final state), its steps after
    ``pending`` and its movement in the journal (refused there if funds are short)."""

    cmd: CreateTransfer
    amount: Decimal
    values: dict[str, Any]
    steps: list[tuple[str, str]]
    move: journal.Movement
    request_id: str = ""
    changes: list[dict[str, Any]] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)


@dataclass
class Twin:
    """The same idempotency key as an earlier transfer of the batch: answered as a replay
    of it (or refused as it was)."""

    first: int
    cmd: CreateTransfer
    amount: Decimal


@dataclass
class Replayed:
    """A transfer whose idempotency key a concurrent transaction committed first."""

    row: Transfer
    outcome: Effects | ServiceError


Prepared = Planned | Twin | Replayed | Effects | ServiceError


def _created_event(t: Transfer, request_id: str) -> Event:
    return transfer_event(t, (PayoutCreated, TransferCreated), request_id)


def _answer(t: Transfer | SimpleNamespace) -> Effects:
    return Effects(201, {"transfer_id": t.id, "state": t.state, "provider": "service"})


def _replay(existing: Transfer | SimpleNamespace, cmd: CreateTransfer, amount: Decimal) -> Effects:
    """Second line of defence: the same idempotency key answers the original, never pays twice."""
    if existing.kind != cmd.kind or existing.amount != amount or existing.currency != cmd.currency:
        raise ServiceError(
            ErrorCode.IDEMPOTENCY_REPLAY_MISMATCH,
            "idempotency_key was already used for a different operation",
            details={"field": "idempotency_key", "transfer_id": existing.id},
        )
    return _answer(existing)


def _key(cmd: CreateTransfer) -> Key:
    return cmd.ctx.tenant_id, cmd.ctx.mode, cmd.idempotency_key


def _checked_amount(cmd: CreateTransfer) -> Decimal:
    if cmd.decision is None:  # fail closed: money moves only with a compliance decision
        raise forbidden("compliance_decision_missing", "the command carries no compliance decision")
    return parse_amount(cmd.amount, STABLECOIN_PLACES, "source.amount")


def _plan(
    idx: parties.WalletIndex, cmd: CreateTransfer, amount: Decimal, ledger_config: LedgerConfig
) -> Planned:
    """Validate one transfer against the batch's wallets and add its movement to the journal."""
    if cmd.source.currency.upper() != cmd.currency:
        raise invalid("source.currency", "currency must be the source currency")
    if cmd.kind == "transfer" and cmd.currency not in TRANSFER_CURRENCIES:
        raise invalid("source.currency", "transfers move USDC or USDT")
    src = parties.source(idx, cmd)
    dst_id, route = None, "payout"
    if cmd.kind == "transfer" and withdrawals.is_withdrawal(idx, cmd):
        withdrawals.check(cmd, src)
        route = withdrawals.ROUTE
    elif cmd.kind == "transfer":
        dst, route = parties.transfer_destination(idx, cmd, src)
        dst_id = dst.id
    else:
        parties.payout_destination(cmd, src)
    assert cmd.decision is not None
    t_id, m, cur = cmd.ctx.tenant_id, cmd.ctx.mode, cmd.currency
    fee = fees.charged(cmd, amount, STABLECOIN_PLACES)
    values: dict[str, Any] = {
        "id": cmd.transfer_id,
        "tenant_id": t_id,
        "mode": m,
        "kind": cmd.kind,
        "route": route,
        "state": "pending",
        "previous_state": None,
        "amount": amount,
        "fee_amount": fee,
        "currency": cur,
        "source_wallet_id": src.id,
        "destination_wallet_id": dst_id,
        "source": msgspec.to_builtins(cmd.source),
        "destination": msgspec.to_builtins(cmd.destination),
        "developer_fee": msgspec.to_builtins(cmd.developer_fee) if cmd.developer_fee else None,
        "idempotency_key": cmd.idempotency_key,
        "decision_id": cmd.decision.decision_id,
    }
    entries = [
        journal.entry(
            tenant_id=t_id,
            mode=m,
            kind=f"{cmd.kind}_hold",
            transfer_id=cmd.transfer_id,
            transfer=values,
            postings=[(journal.available(src.id), cur, -amount), (journal.held(src.id), cur, amount)],
        )
    ]
    steps: list[tuple[str, str]] = []
    if cmd.decision.outcome == "review":
        steps = [("in_review", "compliance_review")]
    elif route == "book":
        assert dst_id is not None
        steps = [("processing", "book_settlement"), ("completed", "book_settlement")]
        entries.append(
            journal.entry(
                tenant_id=t_id,
                mode=m,
                kind=f"{cmd.kind}_completed",
                transfer_id=cmd.transfer_id,
                transfer=values,
                postings=journal.completion(t_id, m, src.id, journal.available(dst_id), cur, amount, fee),
            )
        )
    move = journal.Movement(entries, refusable_for=src.id)
    return Planned(cmd, amount, values, steps, move, cmd.ctx.request_id)


def prepare_transfers(
    session: AsyncSession,
    cmds: Sequence[CreateTransfer],
    ledger_config: LedgerConfig,
    known: Sequence[Transfer],
    wallets: Sequence[Wallet],
) -> list[Prepared]:
    """Validate and resolve a batch of transfers against what the batch's first statement read
    (``known``: transfers recorded under its idempotency keys; ``wallets``: every wallet it
    names) and post their movements, in order, to the session's journal, whose lock
    statement inserts their rows (:func:`new_rows`): no statement of its own."""
    out: list[Prepared] = []
    amounts: dict[int, Decimal] = {}
    for i, cmd in enumerate(cmds):
        try:
            amounts[i] = _checked_amount(cmd)
            out.append(Effects(0, None))  # placeholder, decided below
        except ServiceError as exc:
            out.append(exc)
    by_key = {(t.tenant_id, t.mode, t.idempotency_key): t for t in known}
    idx = parties.WalletIndex(wallets)
    first_of: dict[Key, int] = {}
    now = datetime.now(UTC)
    for i, amount in amounts.items():
        cmd, key = cmds[i], _key(cmds[i])
        try:
            if key in by_key:
                out[i] = _replay(by_key[key], cmd, amount)
            elif key in first_of:
                out[i] = Twin(first_of[key], cmd, amount)
            else:
                planned = _plan(idx, cmd, amount, ledger_config)
                planned.changes, planned.events = _steps_of(planned, ledger_config, now)
                out[i] = planned
                first_of[key] = i
        except ServiceError as exc:
            out[i] = exc
    journal.of(session).movements.extend(p.move for p in out if isinstance(p, Planned))
    return out


def new_rows(prepared: Sequence[Prepared]) -> list[dict[str, Any]]:
    """The rows of the planned transfers (final states), for the journal's lock statement."""
    return [p.values for p in prepared if isinstance(p, Planned)]


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
    return [_key(c) for c in cmds], found


async def answer_concurrent_twins(session: AsyncSession, out: list[Prepared], inserted: set[str]) -> None:
    """A transfer whose idempotency key another transaction committed meanwhile (the insert
    waited for it) answers that transfer, as a replay; its movement leaves the journal."""
    lost = {i: p for i, p in enumerate(out) if isinstance(p, Planned) and p.values["id"] not in inserted}
    if not lost:
        return
    jr = journal.of(session)
    for p in lost.values():
        jr.drop(p.move)
    found = await repo.transfers_by_idempotency_key(session, [_key(p.cmd) for p in lost.values()])
    rows: dict[Key, Transfer] = {(t.tenant_id, t.mode, t.idempotency_key): t for t in found}
    for i, p in lost.items():
        existing = rows[_key(p.cmd)]
        try:
            outcome: Effects | ServiceError = _replay(existing, p.cmd, p.amount)
        except ServiceError as exc:
            outcome = exc
        out[i] = Replayed(existing, outcome)
    log.info("%d transfers answered a concurrent twin of their idempotency key", len(lost))


def _steps_of(
    p: Planned, ledger_config: LedgerConfig, now: datetime
) -> tuple[list[dict[str, Any]], list[Event]]:
    """The state changes of one transfer (its row brought to its final state) and its
    events: created at ``pending``, then one update per step. Each step is checked against
    the state machine (``states.is_legal``), as :func:`states.transition` checks a stored row."""
    v = p.values
    check_path(v["kind"], v["state"], [to for to, _ in p.steps])
    v["created_at"] = v["updated_at"] = now
    events: list[Event] = [_created_event(repo.read_only(Transfer, v), p.request_id)]
    changes = []
    for to, cause in p.steps:
        changes.append(
            {
                "transfer_id": v["id"],
                "from_state": v["state"],
                "to_state": to,
                "cause": cause,
                "request_id": p.request_id,
            }
        )
        v["previous_state"], v["state"] = v["state"], to
        events.append(updated_event(repo.read_only(Transfer, v), p.request_id))
    wait = next_step_s(SimpleNamespace(**v), v["state"], ledger_config)
    v["next_step_at"] = None if wait is None else now + timedelta(seconds=wait)
    return changes, events


def finish_transfers(session: AsyncSession, prepared: list[Prepared]) -> list[Effects | ServiceError]:
    """After the journal was checked: take back the rows of refused transfers (rare: only an
    overdraft), add the state changes of the accepted ones to the batch's write, and answer
    each command (its effects, or why it was refused)."""
    refused = [p for p in prepared if isinstance(p, Planned) and p.move.refused]
    accepted = [p for p in prepared if isinstance(p, Planned) and not p.move.refused]
    writes = journal.of(session).writes()
    writes.refused.extend(p.values["id"] for p in refused)
    writes.changes.extend(c for p in accepted for c in p.changes)
    out: list[Effects | ServiceError] = []
    for p in prepared:
        if isinstance(p, Twin):
            first = prepared[p.first]
            try:
                if isinstance(first, Replayed):
                    out.append(_replay(first.row, p.cmd, p.amount))
                elif isinstance(first, Planned) and not first.move.refused:
                    out.append(_replay(SimpleNamespace(**first.values), p.cmd, p.amount))
                else:
                    raise _outcome_error(out[p.first])
            except ServiceError as exc:
                out.append(exc)
        elif isinstance(p, Planned):
            if p.move.refused:
                out.append(journal.insufficient_funds(p.values["source_wallet_id"], p.amount))
            else:
                effects = _answer(SimpleNamespace(**p.values))
                effects.events.extend(p.events)
                out.append(effects)
        elif isinstance(p, Replayed):
            out.append(p.outcome)
        else:
            out.append(p)
    if accepted or refused:
        log.info("transfers applied: %d accepted, %d refused for funds", len(accepted), len(refused))
    return out


def _outcome_error(outcome: Effects | ServiceError) -> ServiceError:
    assert isinstance(outcome, ServiceError)
    return outcome


async def review_transfer(session: AsyncSession, cmd: ReviewTransfer, ledger_config: LedgerConfig) -> Effects:
    """An operator's decision on an ``in_review`` transfer or payout."""
    t = await lock_for_operator(session, cmd.transfer_id, cmd.ctx)
    rid, events = cmd.ctx.request_id, []
    if cmd.decision == "reject":
        t, ev = await transition(
            session, t, "rejected", cause="operator_reject", ledger_config=ledger_config, request_id=rid
        )
        events.append(ev)
    else:
        t, ev = await transition(
            session, t, "processing", cause="operator_approve", ledger_config=ledger_config, request_id=rid
        )
        events.append(ev)
        if t.route == "book":
            t, ev = await transition(
                session, t, "completed", cause="book_settlement", ledger_config=ledger_config, request_id=rid
            )
            events.append(ev)
    effects = Effects(200, views.transfer(t))
    effects.events.extend(events)
    return effects

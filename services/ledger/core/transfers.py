"""A batch of transfers and payouts, decided in memory (services/ledger/README.md, "Applying a
batch"; the TigerBeetle way).

Given what the batch's first statement read (the transfers already recorded under its
idempotency keys, every wallet its transfers name), :func:`plan_transfers` validates each
transfer, resolves its parties (``parties``), charges its fee (``fees``), plans its row in
its final state with its steps through the state machine (``states.check_path``) and its
first event (in that final state), and builds its one refusable movement: the hold, or for
a ``book`` transfer, which settles at once, its settlement straight from the available
balance (one entry). A second transfer of the batch with the same key is
a :class:`Twin` of the first; a key already recorded is answered as a replay. Once the funds are checked
(``entries.check_funds`` marks the movements refused for insufficient funds),
:func:`settle_transfers` answers every command and says which rows to take back and which
state changes to write.

The shell (``ledger.transfers``) reads the rows, hands the movements to the transaction's
journal, inserts the planned rows and writes what this module decided.

Routes: ``book`` (settles at once -> completed), ``onchain``, ``external`` (a withdrawal out
of the suite) and ``payout`` (-> pending, advanced asynchronously). A command stamped by
compliance with ``decision.outcome == "review"`` waits in ``in_review`` with its funds held.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from types import SimpleNamespace
from typing import Any, cast

import msgspec

from common.contracts.base import Event
from common.contracts.commands import CreateTransfer
from common.errors import ErrorCode, Reason, ServiceError, forbidden, invalid
from common.money import STABLECOIN_PLACES, TRANSFER_CURRENCIES
from ledger.core import accounts, fees, parties
from ledger.core.effects import Effects, parse_amount
from ledger.core.entries import Movement, entry, insufficient_funds
from ledger.core.events import created_event, transfer_view
from ledger.core.rows import TransferRow, WalletRow
from ledger.core.states import check_path, next_step_s

#: A transfer's idempotency: tenant, mode, idempotency key.
Key = tuple[str, str, str]


@dataclass
class Planned:
    """An accepted-so-far transfer: its row (in its final state), its steps after
    ``pending`` and its movement in the journal (refused there if funds are short)."""

    cmd: CreateTransfer
    amount: Decimal
    values: dict[str, Any]
    steps: list[tuple[str, str]]
    move: Movement
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

    row: TransferRow
    outcome: Effects | ServiceError


Prepared = Planned | Twin | Replayed | Effects | ServiceError


def as_row(values: Mapping[str, Any]) -> TransferRow:
    """A planned transfer's values read as a row (a snapshot: later steps change ``values``)."""
    return cast("TransferRow", SimpleNamespace(**values))


def answer(t: TransferRow) -> Effects:
    """The whole transfer, as a read of it answers (a replay: as it is now)."""
    return Effects(201, transfer_view(t))


def replay(existing: TransferRow, cmd: CreateTransfer, amount: Decimal) -> Effects:
    """Second line of defence: the same idempotency key answers the original, never pays twice."""
    if existing.kind != cmd.kind or existing.amount != amount or existing.currency != cmd.currency:
        raise ServiceError(
            ErrorCode.IDEMPOTENCY_REPLAY_MISMATCH,
            "idempotency_key was already used for a different operation",
            details={"field": "idempotency_key", "transfer_id": existing.id},
        )
    return answer(existing)


def transfer_id_reused(transfer_id: str) -> ServiceError:
    """A transfer id names one transfer: a second command naming it under another idempotency
    key is refused, and gives nothing back (what is held under that id is the first's)."""
    return forbidden(
        Reason.TRANSFER_ID_REUSED,
        f"transfer id {transfer_id} already names another transfer",
        field="transfer_id",
    )


def key_of(cmd: CreateTransfer) -> Key:
    return cmd.ctx.tenant_id, cmd.ctx.mode, cmd.idempotency_key


def checked_amount(cmd: CreateTransfer) -> Decimal:
    if cmd.decision is None:  # fail closed: money moves only with a compliance decision
        raise forbidden("compliance_decision_missing", "the command carries no compliance decision")
    return parse_amount(cmd.amount, STABLECOIN_PLACES, "source.amount")


def _parties(wallets: parties.WalletIndex, cmd: CreateTransfer) -> tuple[WalletRow, str | None, str]:
    """The source wallet, the destination wallet (None when the money leaves the suite) and
    the route."""
    if cmd.source.currency.upper() != cmd.currency:
        raise invalid("source.currency", "currency must be the source currency")
    if cmd.kind == "transfer" and cmd.currency not in TRANSFER_CURRENCIES:
        raise invalid("source.currency", "transfers move USDC or USDT")
    source = parties.source(wallets, cmd)
    if cmd.kind == "transfer" and parties.is_withdrawal(wallets, cmd):
        parties.withdrawal_destination(cmd, source)
        return source, None, parties.WITHDRAWAL_ROUTE
    if cmd.kind == "transfer":
        destination, route = parties.transfer_destination(wallets, cmd, source)
        return source, destination.id, route
    parties.payout_destination(cmd, source)
    return source, None, "payout"


def _row(
    cmd: CreateTransfer, amount: Decimal, source: WalletRow, destination_id: str | None, route: str
) -> dict[str, Any]:
    """The transfer's row at ``pending``, its developer fee charged."""
    assert cmd.decision is not None
    return {
        "id": cmd.transfer_id,
        "tenant_id": cmd.ctx.tenant_id,
        "mode": cmd.ctx.mode,
        "kind": cmd.kind,
        "route": route,
        "state": "pending",
        "previous_state": None,
        "amount": amount,
        "fee_amount": fees.charged(cmd, amount, STABLECOIN_PLACES),
        "currency": cmd.currency,
        "source_wallet_id": source.id,
        "destination_wallet_id": destination_id,
        "source": msgspec.to_builtins(cmd.source),
        "destination": msgspec.to_builtins(cmd.destination),
        "developer_fee": msgspec.to_builtins(cmd.developer_fee) if cmd.developer_fee else None,
        "idempotency_key": cmd.idempotency_key,
        "decision_id": cmd.decision.decision_id,
    }


def _plan(wallets: parties.WalletIndex, cmd: CreateTransfer, amount: Decimal) -> Planned:
    """Validate one transfer against the batch's wallets; its row, steps and movement."""
    source, destination_id, route = _parties(wallets, cmd)
    values = _row(cmd, amount, source, destination_id, route)
    tenant_id, mode, currency, fee = cmd.ctx.tenant_id, cmd.ctx.mode, cmd.currency, values["fee_amount"]
    hold = [(accounts.available(source.id), currency, -amount), (accounts.held(source.id), currency, amount)]
    kind, postings = f"{cmd.kind}_hold", hold
    steps: list[tuple[str, str]] = []
    assert cmd.decision is not None
    if cmd.decision.outcome == "review":
        steps = [("in_review", "compliance_review")]
    elif route == "book":
        # Settled in the transaction that creates it: one entry straight from the source's
        # available balance (single-phase, as TigerBeetle posts a transfer with no pending
        # phase). A hold is for what waits: review, the chain, a payout's rail.
        assert destination_id is not None
        steps = [("processing", "book_settlement"), ("completed", "book_settlement")]
        credit = accounts.available(destination_id)
        kind = f"{cmd.kind}_completed"
        postings = accounts.completion(
            tenant_id, mode, source.id, credit, currency, amount, fee, from_held=False
        )
    made = entry(
        tenant_id=tenant_id,
        mode=mode,
        kind=kind,
        transfer_id=cmd.transfer_id,
        transfer=values,
        postings=postings,
    )
    move = Movement([made], refusable_for=source.id)
    return Planned(cmd, amount, values, steps, move, cmd.ctx.request_id)


def _steps_of(p: Planned, settle_s: float, now: datetime) -> tuple[list[dict[str, Any]], list[Event]]:
    """The state changes of one transfer (its row brought to its final state) and its one
    event. Each step is checked against the state machine (``states.is_legal``), as
    ``ledger.states.transition`` checks a stored row, and recorded among the state changes.

    The event is ``transfer.created`` (``payout.created``) in the state the transfer has when
    its transaction commits, the first state anyone can read: a book transfer settles in that
    transaction, so its first event says ``completed`` (as the create answers), one held for
    review says ``in_review``. The steps taken inside that transaction were never visible, so
    no ``*.updated`` is emitted for them; each later change emits one."""
    values = p.values
    check_path(values["kind"], values["state"], [to for to, _ in p.steps])
    values["created_at"] = values["updated_at"] = now
    changes = []
    for to, cause in p.steps:
        changes.append(
            {
                "transfer_id": values["id"],
                "from_state": values["state"],
                "to_state": to,
                "cause": cause,
                "request_id": p.request_id,
            }
        )
        values["previous_state"], values["state"] = values["state"], to
    events: list[Event] = [created_event(as_row(values), p.request_id)]
    wait = next_step_s(as_row(values), values["state"], settle_s)
    values["next_step_at"] = None if wait is None else now + timedelta(seconds=wait)
    return changes, events


def plan_transfers(
    cmds: Sequence[CreateTransfer],
    known: Sequence[TransferRow],
    wallets: Sequence[WalletRow],
    settle_s: float,
    now: datetime,
    taken: Collection[str] = frozenset(),
) -> list[Prepared]:
    """Decide a batch of transfers from what the batch's first statement read (``known``:
    transfers recorded under its idempotency keys; ``wallets``: every wallet it names;
    ``taken``: its transfer ids already recorded), in order: a refusal, a replay, a
    :class:`Twin` or a :class:`Planned` transfer each. A transfer id recorded already, or
    planned earlier in the batch, under another idempotency key is refused
    (:func:`transfer_id_reused`)."""
    out: list[Prepared] = []
    amounts: dict[int, Decimal] = {}
    for i, cmd in enumerate(cmds):
        try:
            amounts[i] = checked_amount(cmd)
            out.append(Effects(0, None))  # placeholder, decided below
        except ServiceError as exc:
            out.append(exc)
    by_key = {(t.tenant_id, t.mode, t.idempotency_key): t for t in known}
    index = parties.WalletIndex(wallets)
    first_of: dict[Key, int] = {}
    held = set(taken)
    for i, amount in amounts.items():
        cmd, key = cmds[i], key_of(cmds[i])
        try:
            if key in by_key:
                out[i] = replay(by_key[key], cmd, amount)
            elif key in first_of:
                out[i] = Twin(first_of[key], cmd, amount)
            elif cmd.transfer_id in held:
                out[i] = transfer_id_reused(cmd.transfer_id)
            else:
                held.add(cmd.transfer_id)
                planned = _plan(index, cmd, amount)
                planned.changes, planned.events = _steps_of(planned, settle_s, now)
                out[i] = planned
                first_of[key] = i
        except ServiceError as exc:
            out[i] = exc
    return out


def movements(prepared: Sequence[Prepared]) -> list[Movement]:
    """The movements of the planned transfers, in batch order, for the transaction's journal."""
    return [p.move for p in prepared if isinstance(p, Planned)]


def new_rows(prepared: Sequence[Prepared]) -> list[dict[str, Any]]:
    """The rows of the planned transfers (final states), for the journal's lock statement."""
    return [p.values for p in prepared if isinstance(p, Planned)]


def lost_to_twins(prepared: Sequence[Prepared], inserted: set[str]) -> dict[int, Planned]:
    """The planned transfers whose rows the lock statement did not insert: a concurrent
    transaction committed their idempotency key first."""
    return {i: p for i, p in enumerate(prepared) if isinstance(p, Planned) and p.values["id"] not in inserted}


def replay_concurrent(
    prepared: list[Prepared], lost: Mapping[int, Planned], rows: Sequence[TransferRow]
) -> None:
    """Each lost transfer answers the row its concurrent twin committed (``rows``), as a
    replay."""
    by_key: dict[Key, TransferRow] = {(t.tenant_id, t.mode, t.idempotency_key): t for t in rows}
    for i, p in lost.items():
        existing = by_key[key_of(p.cmd)]
        try:
            outcome: Effects | ServiceError = replay(existing, p.cmd, p.amount)
        except ServiceError as exc:
            outcome = exc
        prepared[i] = Replayed(existing, outcome)


@dataclass
class Settled:
    """What a checked batch of transfers decided: each command's answer, the rows of the
    transfers refused for funds (to take back) and the state changes of the accepted ones."""

    answers: list[Effects | ServiceError]
    refused: list[str]
    changes: list[dict[str, Any]]


def _answer_twin(
    prepared: Sequence[Prepared], twin: Twin, answers: Sequence[Effects | ServiceError]
) -> Effects:
    """A twin answers what its first answered: a replay of it, or the same refusal."""
    first = prepared[twin.first]
    if isinstance(first, Replayed):
        return replay(first.row, twin.cmd, twin.amount)
    if isinstance(first, Planned) and not first.move.refused:
        return replay(as_row(first.values), twin.cmd, twin.amount)
    outcome = answers[twin.first]
    assert isinstance(outcome, ServiceError)
    raise outcome


def settle_transfers(prepared: Sequence[Prepared]) -> Settled:
    """After the funds check: each command's answer (its effects, or why it was refused), in
    batch order."""
    refused = [p for p in prepared if isinstance(p, Planned) and p.move.refused]
    accepted = [p for p in prepared if isinstance(p, Planned) and not p.move.refused]
    out: list[Effects | ServiceError] = []
    for p in prepared:
        if isinstance(p, Twin):
            try:
                out.append(_answer_twin(prepared, p, out))
            except ServiceError as exc:
                out.append(exc)
        elif isinstance(p, Planned):
            if p.move.refused:
                out.append(insufficient_funds(p.values["source_wallet_id"], p.amount))
            else:
                effects = answer(as_row(p.values))
                effects.events.extend(p.events)
                out.append(effects)
        elif isinstance(p, Replayed):
            out.append(p.outcome)
        else:
            out.append(p)
    return Settled(out, [p.values["id"] for p in refused], [c for p in accepted for c in p.changes])

"""The transfer / payout state machine (docs/guides/money.md, "Transfer and payout states") and
the ONE function that changes a state. Every change moves the money it implies, records itself,
and yields the ``transfer.updated`` / ``payout.updated`` event; nothing else writes
``transfers.state``.

    pending -> processing -> completed        pending -> in_review -> processing | rejected
    processing -> failed                      payouts only: completed -> returned

Money: funds are held at ``pending`` (see transfers.hold), released on ``failed`` and
``rejected``, settled on ``completed``, and credited back on ``returned``.

Sandbox magic amounts (like Stripe's test cards), judged on the cents of the amount:
``x.51`` fails (processing -> failed, funds released) and ``x.52`` makes a payout come back
(completed -> returned, funds credited back). Any other amount completes.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from decimal import Decimal
from types import SimpleNamespace
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from common.contracts.base import Ctx, Event
from common.contracts.events import PayoutCreated, PayoutUpdated, TransferCreated, TransferUpdated
from common.errors import ErrorCode, ServiceError
from common.ids import new_id
from ledger import chain, journal, views
from ledger import repository as repo
from ledger.effects import LedgerConfig, missing, now_iso
from ledger.models import Transfer

log = logging.getLogger(__name__)

Row = Any  # a Transfer, or any object with its attributes (pure checks and tests)

LEGAL: dict[str, frozenset[str]] = {
    "pending": frozenset({"processing", "in_review"}),
    "in_review": frozenset({"processing", "rejected"}),
    "processing": frozenset({"completed", "failed"}),
    "completed": frozenset({"returned"}),  # payouts only
}
PAYOUT_ONLY = frozenset({("completed", "returned")})

MAGIC_FAIL = Decimal("0.51")
MAGIC_RETURN = Decimal("0.52")


def cents(amount: Decimal) -> Decimal:
    return amount - int(amount)


def is_legal(kind: str, frm: str, to: str) -> bool:
    if (frm, to) in PAYOUT_ONLY and kind != "payout":
        return False
    return to in LEGAL.get(frm, frozenset())


def check_path(kind: str, state: str, path: Iterable[str]) -> None:
    """Refuse a planned path through the state machine at its first illegal step (a new
    transfer's steps are planned in memory; :func:`transition` checks a stored row the same
    way)."""
    for to in path:
        if not is_legal(kind, state, to):
            raise illegal(SimpleNamespace(kind=kind, state=state), to)
        state = to


def simulated_next(t: Row) -> str | None:
    """The sandbox simulator's next step for a transfer (``None``: it has none)."""
    if t.state == "pending":
        return "processing"
    if t.state == "processing":
        return "failed" if cents(t.amount) == MAGIC_FAIL else "completed"
    if t.state == "completed" and t.kind == "payout" and cents(t.amount) == MAGIC_RETURN:
        return "returned"
    return None


def next_step_s(t: Row, state: str, ledger_config: LedgerConfig) -> float | None:
    """When the simulator should look at a transfer again; never in production."""
    if t.mode != "sandbox" or t.route == "book":
        return None
    if state in ("pending", "processing"):
        return ledger_config.settle_s
    if state == "completed" and t.kind == "payout" and cents(t.amount) == MAGIC_RETURN:
        return ledger_config.settle_s
    return None


def illegal(t: Row, to: str) -> ServiceError:
    return ServiceError(
        ErrorCode.INVALID_REQUEST,
        f"a {t.kind} in state {t.state} cannot become {to}",
        details={
            "reason": "illegal_transition",
            "field": "transfer_id",
            "state": t.state,
            "requested_state": to,
        },
    )


async def _move_money(session: AsyncSession, t: Transfer, to: str) -> None:
    x, cur, src = t.amount, t.currency, t.source_wallet_id
    if to == "completed":
        if t.kind == "payout":
            credit = journal.external(t.tenant_id, t.mode, cur, "payouts")
        elif t.route == "external":  # a withdrawal: out of the suite
            credit = journal.external(t.tenant_id, t.mode, cur, "settlement")
        else:  # a transfer between wallets names its destination (transfers._plan)
            assert t.destination_wallet_id is not None
            credit = journal.available(t.destination_wallet_id)
        postings = journal.completion(t.tenant_id, t.mode, src, credit, cur, x, t.fee_amount)
    elif to in ("failed", "rejected"):
        postings = [(journal.held(src), cur, -x), (journal.available(src), cur, x)]
    elif to == "returned":  # the whole amount comes back, the developer fee too
        postings = [
            (journal.external(t.tenant_id, t.mode, cur, "payouts"), cur, -(x - t.fee_amount)),
            (journal.available(src), cur, x),
        ]
        if t.fee_amount:
            postings.append((journal.fees(t.tenant_id, t.mode, cur), cur, -t.fee_amount))
    else:
        return
    posted = journal.entry(
        tenant_id=t.tenant_id,
        mode=t.mode,
        kind=f"{t.kind}_{to}",
        transfer_id=t.id,
        transfer={name: getattr(t, name) for name in chain.TRANSFER_FIELDS},
        postings=postings,
    )
    await journal.post(session, posted)


async def lock_for_operator(session: AsyncSession, transfer_id: str, ctx: Ctx) -> Transfer:
    """The transfer an operator's action (review, settle) names, locked: operators act across
    tenants, and a tenant id given narrows the lookup; a tenant's own call stays in its mode."""
    if ctx.actor:
        t = await repo.lock_transfer(session, transfer_id, ctx.tenant_id or None)
    else:
        t = await repo.lock_transfer(session, transfer_id, ctx.tenant_id, ctx.mode)
    if t is None:
        raise missing("transfer", "transfer_id")
    return t


TransferEvent = PayoutCreated | PayoutUpdated | TransferCreated | TransferUpdated


def transfer_event(
    t: Transfer, kinds: tuple[type[TransferEvent], type[TransferEvent]], request_id: str | None, **extra: Any
) -> Event:
    """The event of a transfer or a payout (``kinds``: the payout's class, the transfer's):
    its view, with ``extra`` fields added."""
    cls = kinds[0] if t.kind == "payout" else kinds[1]
    data = {**views.transfer(t), **extra}
    return cls(
        event_id=new_id("evt"),
        tenant_id=t.tenant_id,
        mode=t.mode,
        created_at=now_iso(),
        request_id=request_id,
        data=data,
    )


def updated_event(t: Transfer, request_id: str | None) -> Event:
    return transfer_event(t, (PayoutUpdated, TransferUpdated), request_id, previous_state=t.previous_state)


async def transition(
    session: AsyncSession,
    t: Transfer,
    to: str,
    *,
    cause: str,
    ledger_config: LedgerConfig,
    request_id: str | None = None,
) -> tuple[Transfer, Event]:
    """Move a locked transfer row to ``to``; refuses (and logs) an illegal transition."""
    if not is_legal(t.kind, t.state, to):
        log.warning("illegal transition refused: %s %s %s -> %s (%s)", t.kind, t.id, t.state, to, cause)
        raise illegal(t, to)
    await _move_money(session, t, to)
    row = await repo.set_state(session, t.id, to, t.state, next_step_s(t, to, ledger_config))
    await repo.record_state_change(session, t.id, t.state, to, cause, request_id)
    log.info("%s %s: %s -> %s (%s)", t.kind, t.id, t.state, to, cause)
    return row, updated_event(row, request_id)

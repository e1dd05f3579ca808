"""The transfer / payout state machine (docs/guides/money.md, "Transfer and payout states"):
which changes are legal, what money each one moves, and when the sandbox looks again.

    pending -> processing -> completed        pending -> in_review -> processing | rejected
    processing -> failed                      payouts only: completed -> returned

Money: funds are held at ``pending`` (the hold is planned with the transfer:
``ledger.core.transfers``), released on ``failed`` and ``rejected``, settled on
``completed``, and credited back on ``returned`` (:func:`transition_entry`).

Sandbox magic amounts (like Stripe's test cards), judged on the cents of the amount:
``x.51`` fails (processing -> failed, funds released) and ``x.52`` makes a payout come back
(completed -> returned, funds credited back). Any other amount completes.

The one function that changes a stored row's state, with its statements, is the shell's
``ledger.states.transition``; a new transfer's path is planned and checked here, in memory.
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal

from common.errors import ErrorCode, ServiceError
from ledger.core import accounts, chain
from ledger.core.accounts import Posting
from ledger.core.entries import Entry, entry
from ledger.core.rows import TransferRow

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


def illegal(kind: str, state: str, to: str) -> ServiceError:
    return ServiceError(
        ErrorCode.INVALID_REQUEST,
        f"a {kind} in state {state} cannot become {to}",
        details={
            "reason": "illegal_transition",
            "field": "transfer_id",
            "state": state,
            "requested_state": to,
        },
    )


def check_path(kind: str, state: str, path: Iterable[str]) -> None:
    """Refuse a planned path through the state machine at its first illegal step (a new
    transfer's steps are planned in memory; ``ledger.states.transition`` checks a stored row
    the same way)."""
    for to in path:
        if not is_legal(kind, state, to):
            raise illegal(kind, state, to)
        state = to


def simulated_next(t: TransferRow) -> str | None:
    """The sandbox simulator's next step for a transfer (``None``: it has none)."""
    if t.state == "pending":
        return "processing"
    if t.state == "processing":
        return "failed" if cents(t.amount) == MAGIC_FAIL else "completed"
    if t.state == "completed" and t.kind == "payout" and cents(t.amount) == MAGIC_RETURN:
        return "returned"
    return None


def next_step_s(t: TransferRow, state: str, settle_s: float) -> float | None:
    """When the simulator should look at a transfer again (``settle_s``: the sandbox's step,
    ``LedgerConfig.settle_s``); never in production."""
    if t.mode != "sandbox" or t.route == "book":
        return None
    if state in ("pending", "processing"):
        return settle_s
    if state == "completed" and t.kind == "payout" and cents(t.amount) == MAGIC_RETURN:
        return settle_s
    return None


def transition_postings(t: TransferRow, to: str) -> list[Posting] | None:
    """The money a transfer's move to ``to`` moves (None: the move moves none)."""
    amount, currency, source = t.amount, t.currency, t.source_wallet_id
    if to == "completed":
        if t.kind == "payout":
            credit = accounts.external(t.tenant_id, t.mode, currency, "payouts")
        elif t.route == "external":  # a withdrawal: out of the suite
            credit = accounts.external(t.tenant_id, t.mode, currency, "settlement")
        else:  # a transfer between wallets names its destination (core.transfers)
            assert t.destination_wallet_id is not None
            credit = accounts.available(t.destination_wallet_id)
        return accounts.completion(t.tenant_id, t.mode, source, credit, currency, amount, t.fee_amount)
    if to in ("failed", "rejected"):
        return [(accounts.held(source), currency, -amount), (accounts.available(source), currency, amount)]
    if to == "returned":  # the whole amount comes back, the developer fee too
        postings: list[Posting] = [
            (accounts.external(t.tenant_id, t.mode, currency, "payouts"), currency, -(amount - t.fee_amount)),
            (accounts.available(source), currency, amount),
        ]
        if t.fee_amount:
            postings.append((accounts.fees(t.tenant_id, t.mode, currency), currency, -t.fee_amount))
        return postings
    return None


def transition_entry(t: TransferRow, to: str) -> Entry | None:
    """The journal entry of a transfer's move to ``to``, covering the transfer's terms (None:
    the move moves no money). Legality is the caller's to check first."""
    postings = transition_postings(t, to)
    if postings is None:
        return None
    return entry(
        tenant_id=t.tenant_id,
        mode=t.mode,
        kind=f"{t.kind}_{to}",
        transfer_id=t.id,
        transfer={name: getattr(t, name) for name in chain.TRANSFER_FIELDS},
        postings=postings,
    )

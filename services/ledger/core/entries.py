"""Journal entries and the funds check of a batch (services/ledger/README.md, "Applying a
batch"): what the ledger decides about money once it holds the balances it read.

An :class:`Entry` balances per currency (checked when it is built, before anything can post
it); a :class:`Movement` is entries applied together or not at all, refused alone when it
would take a wallet account below zero. Given the balances the batch's lock statement read,
:func:`check_funds` walks the movements in batch order, in memory; :func:`chain_rows` links
the accepted entries into their hash chains from the heads it read. The shell
(``ledger.journal``) reads those balances and heads and writes what these functions return.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from common.contracts.base import Mode
from common.errors import Reason, ServiceError, reason_code
from common.ids import new_id
from ledger.core import chain
from ledger.core.accounts import Posting, is_external

#: A hash chain: one per tenant and mode.
ChainKey = tuple[str, str]
#: A chain's head: the ``seq`` of its last entry and that entry's hash.
Head = tuple[int, str]


class UnbalancedEntry(Exception):
    """A programming error: an entry whose postings do not sum to zero."""


class NegativeBalance(Exception):
    """A programming error: a movement that may not be refused would overdraw an account."""


def insufficient_funds(wallet_id: str, needed: Decimal) -> ServiceError:
    return ServiceError(
        reason_code(Reason.INSUFFICIENT_FUNDS),
        "insufficient available balance in the source wallet",
        details={"reason": Reason.INSUFFICIENT_FUNDS, "field": "source.amount", "wallet_id": wallet_id},
    )


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


@dataclass
class LockPlan:
    """What a batch's lock statement must lock or create for its movements: the external
    accounts (created when missing), the wallet accounts and the hash chains they touch."""

    externals: dict[str, dict[str, Any]] = field(default_factory=dict)
    wallet_accounts: set[str] = field(default_factory=set)
    chains: set[ChainKey] = field(default_factory=set)


def plan_locks(moves: Iterable[Movement]) -> LockPlan:
    """The accounts and chains ``moves`` touch (an external account's row names its kind, the
    last part of its id)."""
    plan = LockPlan()
    for move in moves:
        for e in move.entries:
            plan.chains.add((e.tenant_id, e.mode))
            for account_id, currency, _ in e.postings:
                if is_external(account_id):
                    plan.externals[account_id] = {
                        "id": account_id,
                        "tenant_id": e.tenant_id,
                        "mode": e.mode,
                        "currency": currency,
                        "kind": account_id.rsplit(".", 1)[1],
                    }
                else:
                    plan.wallet_accounts.add(account_id)
    return plan


def try_movement(move: Movement, balances: dict[str, Decimal], deltas: dict[str, Decimal]) -> bool:
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


@dataclass
class Funded:
    """What the funds check accepted: the entries to write, in batch order, and by how much
    each wallet account moves in all."""

    accepted: list[Entry]
    deltas: dict[str, Decimal]


def check_funds(moves: Sequence[Movement], balances: Mapping[str, Decimal]) -> Funded:
    """Walk ``moves`` in order on ``balances`` (the wallet accounts' balances the batch read,
    left unchanged): a refusable movement that would overdraw is marked refused and skipped,
    the others proceed; one that may not be refused raises :class:`NegativeBalance`."""
    running = dict(balances)
    deltas: dict[str, Decimal] = defaultdict(Decimal)
    accepted: list[Entry] = []
    for move in moves:
        if try_movement(move, running, deltas):
            accepted.extend(move.entries)
        elif move.refusable_for is None:
            raise NegativeBalance(f"{[e.kind for e in move.entries]} would overdraw an account")
        else:
            move.refused = True
    return Funded(accepted, dict(deltas))


def chain_rows(
    accepted: Sequence[Entry], locked: Mapping[ChainKey, Head], moved: dict[ChainKey, Head], now: datetime
) -> list[dict[str, Any]]:
    """The rows of the accepted entries, each linked into its tenant's and mode's hash chain
    (``ledger.core.chain``), extended in batch order from the locked heads (or from where an
    earlier check of the same transaction left them: ``moved``, updated)."""
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
    return rows


def posting_rows(accepted: Iterable[Entry]) -> list[dict[str, Any]]:
    """The postings rows of the accepted entries."""
    return [
        {"entry_id": e.id, "account_id": a, "currency": c, "amount": amt}
        for e in accepted
        for a, c, amt in e.postings
    ]

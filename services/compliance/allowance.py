"""The daily cap of a whole batch of transfers, settled in three statements.

Transfers are decided one by one in memory; each one that passes every other rule leaves a
:class:`Claim` on the batch's snapshot. Then, for the whole batch (every tenant in it):

1. the batch's first statement (``repository.batch``) locks the usage row of every (tenant,
   mode, currency, UTC day) the batch touches, creating missing rows, and returns the committed
   totals; rows are locked in key order, so two instances settling overlapping batches wait for
   each other, never deadlock;
2. :func:`allot_batch` grants the claims in batch order in memory (:func:`allot`), a claim
   passing iff the day's usage plus its amount stays within its cap, exactly as one
   conditional upsert per transfer would, without a round trip per transfer;
3. its last statement writes the new totals and the decisions, each granted transfer's hold
   (:func:`holds_of`) on its decision.

The locks are held until the batch's transaction commits, so a second instance deciding the
same tenant's transfers reads totals that already include the first's: caps stay exact.
:func:`release` gives failed transfers' amounts back taking the same locks in the same order,
so it cannot deadlock with a deciding batch either.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from compliance import repository as repo

UsageKey = tuple[str, str, str, date]  # (tenant_id, mode, currency, day)


@dataclass(frozen=True, slots=True)
class Claim:
    """A transfer's wish to take ``amount`` from its day's cap of ``daily``."""

    command_id: str
    transfer_id: str
    tenant_id: str
    mode: str
    currency: str
    day: date
    amount: Decimal
    daily: Decimal
    context: Any = field(default=None, compare=False)  # what the decider needs to word a refusal

    @property
    def key(self) -> UsageKey:
        return (self.tenant_id, self.mode, self.currency, self.day)


def allot(
    claims: Sequence[Claim], used: dict[UsageKey, Decimal]
) -> tuple[dict[str, Decimal], dict[UsageKey, Decimal]]:
    """Grant claims in order against the usage ``used``: (refused command id -> the usage it
    met, new totals of the keys that grew)."""
    totals = dict(used)
    refused: dict[str, Decimal] = {}
    grown: dict[UsageKey, Decimal] = {}
    for c in claims:
        now = totals.get(c.key, Decimal(0))
        if now + c.amount <= c.daily:
            totals[c.key] = grown[c.key] = now + c.amount
        else:
            refused[c.command_id] = now
    return refused, grown


async def allot_batch(
    session: AsyncSession, claims: Sequence[Claim], locked: dict[UsageKey, Decimal]
) -> tuple[dict[str, Decimal], dict[UsageKey, Decimal], dict[str, dict[str, Any]]]:
    """The batch's claims taken from their days, for a batch whose first statement locked its
    usage rows (``locked``): the refused claims, the new totals and the holds, for the batch's
    write statement. A key it did not lock (none, unless the UTC day turned) is locked here."""
    if not claims:
        return {}, {}, {}
    used = dict(locked)
    if missing := sorted({c.key for c in claims} - used.keys()):
        used.update(await repo.lock_usage(session, missing))
    refused, totals = allot(claims, used)
    return refused, totals, holds_of(claims, refused)


def holds_of(claims: Sequence[Claim], refused: dict[str, Decimal]) -> dict[str, dict[str, Any]]:
    """The hold of each granted claim by command id: the ``hold_*`` columns of its decision
    (its transfer and tenant are the decision's own)."""
    return {
        c.command_id: {"hold_currency": c.currency, "hold_day": c.day, "hold_amount": c.amount}
        for c in claims
        if c.command_id not in refused
    }


async def release(session: AsyncSession, holds: Sequence[tuple[str, str]]) -> dict[str, Decimal]:
    """Give the amounts of failed transfers (transfer_id, tenant_id) back to their days, each
    once: returns what was released per transfer id (nothing for holds released before)."""
    return await _give_back(session, await repo.mark_released(session, sorted(set(holds))))


async def release_failed(session: AsyncSession, failed: Sequence[tuple[str, str, str]]) -> dict[str, Decimal]:
    """:func:`release` for commands whose failure the ledger reports, (transfer_id, command_id,
    tenant_id): a hold is given back only to the command that took it, so a release for a
    command that reused another's transfer id gives nothing back."""
    return await _give_back(session, await repo.mark_released_for(session, sorted(set(failed))))


async def _give_back(session: AsyncSession, released: Sequence[Any]) -> dict[str, Decimal]:
    """The released holds' amounts taken off their days' usage."""
    if not released:
        return {}
    back: dict[UsageKey, Decimal] = {}
    for r in released:
        key = (r.tenant_id, r.mode, r.currency, r.day)
        back[key] = back.get(key, Decimal(0)) + Decimal(r.amount)
    used = await repo.lock_usage(session, sorted(back))
    await repo.set_usage(session, {k: max(used[k] - amount, Decimal(0)) for k, amount in back.items()})
    return {r.transfer_id: Decimal(r.amount) for r in released}

"""Give daily cap back when a transfer or payout fails or is rejected.

Cap usage is taken at approval (funds are held from ``pending``). This consumer reads
``transfer.updated`` / ``payout.updated`` from the events topic in its own consumer group
and releases the held amount once (``hold_released_at`` on its decision) when the new state is
``failed`` or ``rejected``. A ``returned`` payout keeps its usage (the money did move).

Only the ledger's word gives cap back: a record that would release anything is released only
when the ledger's signature verifies over it (:func:`admission`); anything else is refused,
dead-lettered ``authority_invalid`` and counted (docs/security.md, "Who writes each topic").
Records that release nothing are not checked here: they change nothing in compliance.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from common import authority
from common.authority import USAGE_SIGNERS, AuthorityInvalid, VerifyKeys
from common.contracts.events import EVENT_RECORDS
from common.metrics import AUTHORITY_REFUSED
from compliance import allowance

log = logging.getLogger(__name__)

RELEASING_STATES = frozenset({"failed", "rejected"})
UPDATE_TYPES = frozenset({"transfer.updated", "payout.updated"})


class _Event(msgspec.Struct):
    type: str = ""
    tenant_id: str = ""
    data: dict[str, Any] = msgspec.field(default_factory=dict)


class _Record(_Event):
    """A record of the events topic: one event, or one fact's events (``EventBatch``)."""

    events: list[_Event] = msgspec.field(default_factory=list)


def releases(raws: Sequence[bytes]) -> list[tuple[str, str]]:
    """(tenant_id, transfer_id) of the updates that give cap back; other events are ignored."""
    out = []
    for raw in raws:
        try:
            rec = msgspec.json.decode(raw, type=_Record)
        except (msgspec.DecodeError, msgspec.ValidationError):
            continue
        for ev in rec.events or [rec]:
            if ev.type not in UPDATE_TYPES or ev.data.get("state") not in RELEASING_STATES:
                continue
            transfer_id = ev.data.get("transfer_id")
            if isinstance(transfer_id, str):
                out.append((ev.tenant_id, transfer_id))
    return out


@dataclass(frozen=True)
class Signal:
    """A record of the events topic as the usage consumer reads it, once: its bytes (what the
    ledger signed) and the (tenant_id, transfer_id) of the updates in it that give cap back."""

    raw: bytes
    gives_back: list[tuple[str, str]]

    @classmethod
    def read(cls, raw: bytes) -> Signal:
        return cls(raw, releases([raw]))


def admission(keys: VerifyKeys) -> Callable[[Signal], None]:
    """The usage consumer's check of each record (``BatchProcessor.admit``): one that gives
    cap back must carry the ledger's valid signature over the record as it is."""
    verify = authority.admit("compliance", keys, lambda _record: USAGE_SIGNERS)

    def check(signal: Signal) -> None:
        if not signal.gives_back:
            return
        try:
            record = EVENT_RECORDS.decode(signal.raw)
        except (msgspec.DecodeError, msgspec.ValidationError):
            AUTHORITY_REFUSED.labels("compliance", "unreadable").inc()
            why = "a record giving cap back is no event the ledger signs"
            raise AuthorityInvalid("unreadable", why) from None
        verify(record)

    return check


async def release_given(
    sessions: async_sessionmaker[AsyncSession], failed: Sequence[tuple[str, str, str]]
) -> int:
    """Release the holds the ledger gave back, each once and only to the command that failed:
    (transfer_id, command_id, tenant_id)."""
    if not failed:
        return 0
    async with sessions() as session, session.begin():
        released = await allowance.release_failed(session, failed)
    for transfer_id, amount in released.items():
        log.info("gave back %s of daily cap for refused transfer %s", amount, transfer_id)
    return len(released)


async def release_batch(sessions: async_sessionmaker[AsyncSession], signals: Sequence[Signal]) -> int:
    todo = [update for signal in signals for update in signal.gives_back]
    if not todo:
        return 0
    async with sessions() as session, session.begin():
        released = len(await allowance.release(session, [(transfer, tenant) for tenant, transfer in todo]))
    if released:
        log.info("released daily cap of %d failed or rejected transfers", released)
    return released

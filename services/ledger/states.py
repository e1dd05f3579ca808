"""The ONE function that changes a stored transfer's state (docs/guides/money.md, "Transfer
and payout states"): the shell around the state machine of ``ledger.core.states``.

Every change is checked against the core's table, posts the money the core says it moves to
the transaction's journal (handed in by the boundary), records itself, and yields the
``transfer.updated`` / ``payout.updated`` event; nothing else writes ``transfers.state``.
"""

from __future__ import annotations

import logging

from sqlalchemy.ext.asyncio import AsyncSession

from common.contracts.base import Ctx, Event
from ledger import repository as repo
from ledger.config import LedgerConfig
from ledger.core.effects import missing
from ledger.core.events import updated_event
from ledger.core.states import illegal, is_legal, next_step_s, transition_entry
from ledger.journal import Journal
from ledger.models import Transfer

log = logging.getLogger(__name__)


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


async def transition(
    session: AsyncSession,
    journal: Journal,
    t: Transfer,
    to: str,
    *,
    cause: str,
    ledger_config: LedgerConfig,
    request_id: str | None = None,
) -> tuple[Transfer, Event]:
    """Move a locked transfer row to ``to``, its money posted to ``journal``; refuses (and
    logs) an illegal transition."""
    if not is_legal(t.kind, t.state, to):
        log.warning("illegal transition refused: %s %s %s -> %s (%s)", t.kind, t.id, t.state, to, cause)
        raise illegal(t.kind, t.state, to)
    moved = transition_entry(t, to)
    if moved is not None:
        journal.add([moved])
    row = await repo.set_state(session, t.id, to, t.state, next_step_s(t, to, ledger_config.settle_s))
    await repo.record_state_change(session, t.id, t.state, to, cause, request_id)
    log.info("%s %s: %s -> %s (%s)", t.kind, t.id, t.state, to, cause)
    return row, updated_event(row, request_id)

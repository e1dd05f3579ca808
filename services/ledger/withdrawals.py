"""External on-chain withdrawals (docs/guides/money.md, "Withdrawing to an external address").

A ``stablecoin`` destination whose address is no wallet of the tenant and mode leaves the
suite (decided with the transfer's other parties: ``ledger.core.parties.is_withdrawal``): the
funds are held at ``pending`` (like any transfer), the transfer advances like the other
asynchronous ones (the sandbox simulator; in production the operator's
:func:`settle_transfer`), ``completed`` moves the held funds to the suite's external
settlement account ``ext.<tenant>.<mode>.<currency>.settlement`` and ``failed`` releases them.
Screening of the address happened in compliance, before the command got here.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from common.contracts.commands import SettleTransfer
from common.errors import invalid
from ledger.config import LedgerConfig
from ledger.core.effects import Effects
from ledger.core.events import transfer_view
from ledger.journal import Journal
from ledger.states import lock_for_operator, transition


async def settle_transfer(
    session: AsyncSession, journal: Journal, cmd: SettleTransfer, ledger_config: LedgerConfig
) -> Effects:
    """An operator settles an asynchronous transfer (production has no simulator):
    ``completed`` or ``failed``, through ``processing`` when it is still ``pending``."""
    t = await lock_for_operator(session, cmd.transfer_id, cmd.ctx)
    if t.route == "book":
        raise invalid("transfer_id", "a book transfer settles at once", reason="not_asynchronous")
    request_id, events = cmd.ctx.request_id, []
    if t.state == "pending":
        t, event = await transition(
            session,
            journal,
            t,
            "processing",
            cause="operator_settle",
            ledger_config=ledger_config,
            request_id=request_id,
        )
        events.append(event)
    t, event = await transition(
        session,
        journal,
        t,
        cmd.outcome,
        cause="operator_settle",
        ledger_config=ledger_config,
        request_id=request_id,
    )
    events.append(event)
    effects = Effects(200, transfer_view(t))
    effects.events.extend(events)
    return effects

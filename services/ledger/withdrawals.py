"""External on-chain withdrawals (docs/guides/money.md, "Withdrawing to an external address").

A ``stablecoin`` destination whose address is no wallet of the tenant and mode leaves the
suite: the funds are held at ``pending`` (like any transfer), the transfer advances like the
other asynchronous ones (the sandbox simulator; in production the operator's
``settle_transfer``), ``completed`` moves the held funds to the suite's external settlement
account ``ext.<tenant>.<mode>.<currency>.settlement`` and ``failed`` releases them.
Screening of the address happened in compliance, before the command got here.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from common import addresses
from common.contracts.commands import CreateTransfer, SettleTransfer
from common.errors import invalid
from ledger import parties, views
from ledger.effects import Effects, LedgerConfig
from ledger.models import Wallet
from ledger.states import lock_for_operator, transition

ROUTE = "external"


def is_withdrawal(idx: parties.WalletIndex, cmd: CreateTransfer) -> bool:
    d = cmd.destination
    return (
        d.payment_rail.lower() == "stablecoin"
        and bool(d.address)
        and idx.at_address(cmd, d.address or "") is None
    )


def check(cmd: CreateTransfer, src: Wallet) -> None:
    """The address must be one of the source wallet's chain (the gateway checked its shape)."""
    d = cmd.destination
    if d.chain and d.chain.upper() != src.chain:
        raise invalid("destination.chain", "a withdrawal stays on the source wallet's chain")
    if d.currency.upper() != cmd.currency:
        raise invalid("destination.currency", "source and destination currency must match")
    if (why := addresses.problem(src.chain, d.address or "")) is not None:
        raise invalid("destination.address", f"{why} ({src.chain})")


async def settle_transfer(session: AsyncSession, cmd: SettleTransfer, ledger_config: LedgerConfig) -> Effects:
    """An operator settles an asynchronous transfer (production has no simulator):
    ``completed`` or ``failed``, through ``processing`` when it is still ``pending``."""
    t = await lock_for_operator(session, cmd.transfer_id, cmd.ctx)
    if t.route == "book":
        raise invalid("transfer_id", "a book transfer settles at once", reason="not_asynchronous")
    rid, events = cmd.ctx.request_id, []
    if t.state == "pending":
        t, ev = await transition(
            session, t, "processing", cause="operator_settle", ledger_config=ledger_config, request_id=rid
        )
        events.append(ev)
    t, ev = await transition(
        session, t, cmd.outcome, cause="operator_settle", ledger_config=ledger_config, request_id=rid
    )
    events.append(ev)
    effects = Effects(200, views.transfer(t))
    effects.events.extend(events)
    return effects

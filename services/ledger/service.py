"""Ledger decisions: each command becomes state changes, a result and events.

Functions take the session and never commit; the message boundary (``handlers``) owns the
transaction and dispatches the outbox after commit. The command modules (customers,
wallets, virtual_accounts, deposits, transfers, reads) register themselves in ``HANDLERS``.
"""

from __future__ import annotations

import logging
from typing import Any

import msgspec
from sqlalchemy.ext.asyncio import AsyncSession

from common.contracts import Command, Result, encode
from common.contracts.base import ErrorBody, Event
from common.contracts.commands import (
    CreateCustomer,
    CreateTransfer,
    CreateVirtualAccount,
    CreateWallet,
    GetResource,
    ListResources,
    ReleaseAllowance,
    ReviewTransfer,
    SandboxDeposit,
)
from common.errors import ErrorCode, ServiceError
from common.outbox import Outbox, OutMessage
from common.topics import Topics
from ledger import customers, deposits, reads, transfers, virtual_accounts, wallets
from ledger.effects import Effects, LedgerConfig

log = logging.getLogger(__name__)

HANDLERS: dict[type, Any] = {
    CreateCustomer: customers.create_customer,
    CreateWallet: wallets.create_wallet,
    CreateVirtualAccount: virtual_accounts.create_virtual_account,
    SandboxDeposit: deposits.sandbox_deposit,
    CreateTransfer: transfers.create_transfer,
    ReviewTransfer: transfers.review_transfer,
    GetResource: reads.get_resource,
    ListResources: reads.list_resources,
}

# Reads change nothing: no inbox record, no outbox row; their answer is published after the
# batch commits, and a redelivered read is simply answered again.
READS = (GetResource, ListResources)


def is_read(cmd: Command) -> bool:
    return isinstance(cmd, READS)


async def execute(session: AsyncSession, cmd: Command, cfg: LedgerConfig) -> Effects:
    handler = HANDLERS.get(type(cmd))
    if handler is None:
        raise ServiceError(ErrorCode.INVALID_REQUEST, f"unsupported command {type(cmd).__name__}")
    return await handler(session, cmd, cfg)


def result_of(cmd: Command, fx: Effects | None, err: ServiceError | None) -> Result:
    if err is not None:
        return Result(
            command_id=cmd.command_id,
            request_id=cmd.ctx.request_id,
            status=err.status,
            error=ErrorBody(code=err.code, message=err.message, details=err.details),
        )
    assert fx is not None
    return Result(command_id=cmd.command_id, request_id=cmd.ctx.request_id, status=fx.status, data=fx.data)


def stage_events(session: AsyncSession, outbox: Outbox, topics: Topics, events: list[Event]) -> None:
    for ev in events:
        outbox.add(session, OutMessage(topics.events, encode(ev), key=ev.tenant_id.encode()))


def allowance_release(cmd: Command, topics: Topics) -> OutMessage | None:
    """For a transfer compliance approved that the ledger refused or failed: the message that
    gives its daily-cap allowance back (contract 12.2). None for anything else."""
    if not isinstance(cmd, CreateTransfer) or cmd.decision is None:
        return None
    release = ReleaseAllowance(
        command_id=f"rel_{cmd.command_id}",
        ctx=msgspec.structs.replace(cmd.ctx, reply_to=None, idempotency_key=None),
        transfer_id=cmd.transfer_id,
    )
    return OutMessage(topics.compliance_commands, encode(release), key=cmd.ctx.tenant_id.encode())


__all__ = [
    "Effects",
    "LedgerConfig",
    "allowance_release",
    "execute",
    "is_read",
    "result_of",
    "stage_events",
]

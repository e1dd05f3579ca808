"""Operator actions that are one command to the service owning the data, relayed over Kafka
request/reply and answered with its result: transfers (ledger: review, settle), deliveries and
endpoints (webhooks: replay, bulk replay, list, re-enable), the address screening list and the
decision log (compliance).

A transfer or delivery id names its tenant already; ``tenant_id`` (and ``mode``) may be given
to narrow the lookup and are then checked against the tenants admin knows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from admin import schemas
from admin.context import ActionContext
from admin.policy import known_tenant
from common.contracts import commands
from common.contracts.base import Command
from common.ids import new_id
from common.validation import decode_body


@dataclass(frozen=True, slots=True)
class Relayed:
    """One relayed action: the request it decodes, the command it sends and to which topic (a
    :class:`common.topics.Topics` attribute), and what the audit log records."""

    request: type[msgspec.Struct]
    command: Callable[..., Command]
    topic: str
    fields: tuple[str, ...]  # request fields the command takes as they are
    target: tuple[str, ...] = ()  # request fields naming what the action touched (joined by ":")
    audit: tuple[str, ...] | None = None  # request fields kept as the audit entry's details
    narrow: bool = False  # the tenant given becomes the command's target_tenant_id (lists)

    async def __call__(self, ctx: ActionContext, raw: bytes) -> Any:
        p = decode_body(raw, self.request)
        given = getattr(p, "tenant_id", None)
        tid = await known_tenant(ctx, given) if given is not None else None
        if self.target:
            ctx.target = ":".join(str(getattr(p, name)) for name in self.target)
        if self.audit is not None:
            ctx.details = {name: getattr(p, name) for name in self.audit}
            if hasattr(p, "tenant_id"):
                ctx.details["tenant_id"] = tid
        fields = {name: getattr(p, name) for name in self.fields}
        if hasattr(p, "after"):  # a list's cursor
            fields["starting_after"] = p.after
        if self.narrow:
            fields["target_tenant_id"] = tid
        cmd = self.command(
            command_id=new_id("cmd"), ctx=ctx.command_ctx(tid, getattr(p, "mode", None)), **fields
        )
        return await ctx.call(getattr(ctx.topics, self.topic), cmd)


LEDGER, WEBHOOKS, COMPLIANCE = "ledger_commands", "webhooks_commands", "compliance_commands"

RELAYED: dict[str, Relayed] = {
    "review_transfer": Relayed(
        schemas.ReviewTransfer,
        commands.ReviewTransfer,
        LEDGER,
        ("transfer_id", "decision"),
        target=("transfer_id",),
        audit=("decision", "mode"),
    ),
    # production has no simulator: an operator settles an asynchronous transfer (contract 12.4)
    "settle_transfer": Relayed(
        schemas.SettleTransfer,
        commands.SettleTransfer,
        LEDGER,
        ("transfer_id", "outcome"),
        target=("transfer_id",),
        audit=("outcome", "mode"),
    ),
    # does one tenant's money add up (contract 13.4): read-only, the ledger answers
    "reconcile": Relayed(
        schemas.Reconcile, commands.Reconcile, LEDGER, ("limit",), ("tenant_id", "mode"), ()
    ),
    # recompute the journal's hash chains (contract 13.5), all of them or one tenant's
    "verify_journal": Relayed(
        schemas.VerifyJournal, commands.VerifyJournal, LEDGER, ("mode",), audit=("mode",), narrow=True
    ),
    "replay_delivery": Relayed(
        schemas.ReplayDelivery, commands.ReplayDelivery, WEBHOOKS, ("delivery_id",), ("delivery_id",), ()
    ),
    # every dead delivery of one endpoint (since a time); webhooks answers the count
    "replay_deliveries": Relayed(
        schemas.ReplayDeliveries,
        commands.ReplayDeliveries,
        WEBHOOKS,
        ("webhook_id", "since"),
        ("webhook_id",),
        ("since",),
    ),
    # re-enable an endpoint the service disabled after 5 days without a success
    "enable_webhook": Relayed(
        schemas.EnableWebhook, commands.EnableWebhook, WEBHOOKS, ("webhook_id",), ("webhook_id",), ()
    ),
    "list_deliveries": Relayed(
        schemas.ListDeliveries,
        commands.ListDeliveries,
        WEBHOOKS,
        ("webhook_id", "status", "limit"),
        narrow=True,
    ),
    "list_decisions": Relayed(
        schemas.ListDecisions, commands.ListDecisions, COMPLIANCE, ("limit",), narrow=True
    ),
    "add_screened_address": Relayed(
        schemas.AddScreenedAddress,
        commands.AddScreenedAddress,
        COMPLIANCE,
        ("chain", "address", "reason"),
        ("chain", "address"),
        ("reason",),
    ),
    "remove_screened_address": Relayed(
        schemas.ScreenedAddress,
        commands.RemoveScreenedAddress,
        COMPLIANCE,
        ("chain", "address"),
        ("chain", "address"),
    ),
    "list_screened_addresses": Relayed(
        schemas.ListScreenedAddresses, commands.ListScreenedAddresses, COMPLIANCE, ("limit", "starting_after")
    ),
}

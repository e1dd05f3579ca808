"""Operator actions that are one command to the service owning the data, relayed over Kafka
request/reply and answered with its result: transfers (ledger: review, settle), deliveries and
endpoints (webhooks: replay, bulk replay, list, re-enable), the address screening list and the
decision log (compliance).

A transfer or delivery id names its tenant already; ``tenant_id`` (and ``mode``) may be given
to narrow the lookup and are then checked against the tenants admin knows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from admin import schemas
from admin.actions.policy import known_tenant
from admin.context import ActionContext
from common.contracts import commands
from common.contracts.base import Envelope
from common.ids import new_id
from common.topics import Topic
from common.validation import decode_body


@dataclass(frozen=True, slots=True)
class Relayed:
    """One relayed action: the request it decodes, the command it sends and to which topic, and
    what the audit log records.

    The command takes the request's fields of the same name as they are, a list's cursor as
    ``starting_after``, and, where it has a ``target_tenant_id`` (lists, the journal check), the
    tenant given."""

    request: type[msgspec.Struct]
    command: type[Envelope]
    topic: Topic
    target: tuple[str, ...] = ()  # request fields naming what the action touched (joined by ":")
    audit: tuple[str, ...] | None = None  # request fields kept as the audit entry's details

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
        taken = self.command.__struct_fields__
        fields = {name: getattr(p, name) for name in self.request.__struct_fields__ if name in taken}
        if hasattr(p, "after"):  # a list's cursor
            fields["starting_after"] = p.after
        if "target_tenant_id" in taken:
            fields["target_tenant_id"] = tid
        cmd = self.command(
            command_id=new_id("cmd"), ctx=ctx.command_ctx(tid, getattr(p, "mode", None)), **fields
        )
        return await ctx.call(ctx.topics[self.topic], cmd)


LEDGER, WEBHOOKS, COMPLIANCE = Topic.LEDGER_COMMANDS, Topic.WEBHOOKS_COMMANDS, Topic.COMPLIANCE_COMMANDS

RELAYED: dict[str, Relayed] = {
    "review_transfer": Relayed(
        schemas.ReviewTransfer, commands.ReviewTransfer, LEDGER, ("transfer_id",), ("decision", "mode")
    ),
    # production has no simulator: an operator settles an asynchronous transfer
    "settle_transfer": Relayed(
        schemas.SettleTransfer, commands.SettleTransfer, LEDGER, ("transfer_id",), ("outcome", "mode")
    ),
    # does one tenant's money add up: read-only, the ledger answers
    "reconcile": Relayed(schemas.Reconcile, commands.Reconcile, LEDGER, ("tenant_id", "mode"), ()),
    # recompute the journal's hash chains, all of them or one tenant's
    "verify_journal": Relayed(schemas.VerifyJournal, commands.VerifyJournal, LEDGER, audit=("mode",)),
    "replay_delivery": Relayed(
        schemas.ReplayDelivery, commands.ReplayDelivery, WEBHOOKS, ("delivery_id",), ()
    ),
    # every dead delivery of one endpoint (since a time); webhooks answers the count
    "replay_deliveries": Relayed(
        schemas.ReplayDeliveries, commands.ReplayDeliveries, WEBHOOKS, ("webhook_id",), ("since",)
    ),
    # re-enable an endpoint the service disabled after 5 days without a success
    "enable_webhook": Relayed(schemas.EnableWebhook, commands.EnableWebhook, WEBHOOKS, ("webhook_id",), ()),
    "list_deliveries": Relayed(schemas.ListDeliveries, commands.ListDeliveries, WEBHOOKS),
    "list_decisions": Relayed(schemas.ListDecisions, commands.ListDecisions, COMPLIANCE),
    "add_screened_address": Relayed(
        schemas.AddScreenedAddress, commands.AddScreenedAddress, COMPLIANCE, ("chain", "address"), ("reason",)
    ),
    "remove_screened_address": Relayed(
        schemas.ScreenedAddress, commands.RemoveScreenedAddress, COMPLIANCE, ("chain", "address")
    ),
    "list_screened_addresses": Relayed(
        schemas.ListScreenedAddresses, commands.ListScreenedAddresses, COMPLIANCE
    ),
}

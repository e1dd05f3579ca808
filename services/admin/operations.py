"""Operations on money and deliveries, relayed to their owners over Kafka request/reply:
review_transfer (ledger), replay_delivery, replay_deliveries, list_deliveries and enable_webhook
(webhooks).

A transfer or delivery id names its tenant already; ``tenant_id`` (and ``mode``) may be given
to narrow the lookup and are then checked against the tenants admin knows.
"""

from __future__ import annotations

from typing import Any

from admin import schemas
from admin.context import ActionContext
from admin.policy import known_tenant
from common.contracts.commands import (
    EnableWebhook,
    ListDeliveries,
    ReplayDeliveries,
    ReplayDelivery,
    ReviewTransfer,
)
from common.ids import new_id
from common.validation import decode_body


async def review_transfer(ctx: ActionContext, raw: bytes) -> Any:
    p = decode_body(raw, schemas.ReviewTransfer)
    tid = await known_tenant(ctx, p.tenant_id) if p.tenant_id is not None else None
    ctx.target = p.transfer_id
    ctx.details = {"decision": p.decision, "tenant_id": tid, "mode": p.mode}
    cmd = ReviewTransfer(
        command_id=new_id("cmd"),
        ctx=ctx.command_ctx(tid, p.mode),
        transfer_id=p.transfer_id,
        decision=p.decision,
    )
    return await ctx.call(ctx.topics.ledger_commands, cmd)


async def replay_delivery(ctx: ActionContext, raw: bytes) -> Any:
    p = decode_body(raw, schemas.ReplayDelivery)
    tid = await known_tenant(ctx, p.tenant_id) if p.tenant_id is not None else None
    ctx.target = p.delivery_id
    ctx.details = {"tenant_id": tid}
    cmd = ReplayDelivery(command_id=new_id("cmd"), ctx=ctx.command_ctx(tid, None), delivery_id=p.delivery_id)
    return await ctx.call(ctx.topics.webhooks_commands, cmd)


async def replay_deliveries(ctx: ActionContext, raw: bytes) -> Any:
    """Replay every dead delivery of one endpoint (since a time); webhooks answers the count."""
    p = decode_body(raw, schemas.ReplayDeliveries)
    tid = await known_tenant(ctx, p.tenant_id) if p.tenant_id is not None else None
    ctx.target = p.webhook_id
    ctx.details = {"tenant_id": tid, "since": p.since}
    cmd = ReplayDeliveries(
        command_id=new_id("cmd"), ctx=ctx.command_ctx(tid, None), webhook_id=p.webhook_id, since=p.since
    )
    return await ctx.call(ctx.topics.webhooks_commands, cmd)


async def enable_webhook(ctx: ActionContext, raw: bytes) -> Any:
    """Re-enable an endpoint the service disabled after 5 days without a success."""
    p = decode_body(raw, schemas.EnableWebhook)
    tid = await known_tenant(ctx, p.tenant_id) if p.tenant_id is not None else None
    ctx.target = p.webhook_id
    ctx.details = {"tenant_id": tid}
    cmd = EnableWebhook(command_id=new_id("cmd"), ctx=ctx.command_ctx(tid, None), webhook_id=p.webhook_id)
    return await ctx.call(ctx.topics.webhooks_commands, cmd)


async def list_deliveries(ctx: ActionContext, raw: bytes) -> Any:
    p = decode_body(raw, schemas.ListDeliveries)
    tid = await known_tenant(ctx, p.tenant_id) if p.tenant_id is not None else None
    cmd = ListDeliveries(
        command_id=new_id("cmd"),
        ctx=ctx.command_ctx(tid, None),
        target_tenant_id=tid,
        webhook_id=p.webhook_id,
        status=p.status,
        limit=p.limit,
        starting_after=p.after,
    )
    return await ctx.call(ctx.topics.webhooks_commands, cmd)

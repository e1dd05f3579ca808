"""Policy actions, relayed to compliance (which owns the data) over Kafka request/reply:
approve_route, revoke_route, set_transfer_cap, upsert_external_account (list_decisions is
relayed as it is, see :mod:`admin.actions.operations`).

Admin checks what it owns (the tenant exists) and the shape of the request, so a mistake is
a 400 naming the field before anything is sent.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from admin import schemas
from admin.context import ActionContext
from common.checksums import aba_valid, iban_valid, normalize_iban
from common.contracts.commands import (
    ApproveRoute,
    RevokeRoute,
    SetTransferCap,
    UpsertExternalAccount,
)
from common.errors import invalid
from common.ids import new_id
from common.money import FIAT_OF_RAIL, STABLECOINS
from common.validation import decode_body


async def known_tenant(ctx: ActionContext, tenant_id: str) -> str:
    return str((await ctx.target_tenant(tenant_id)).id)


def check_rail_currency(rail: str, currency: str) -> str:
    cur = currency.upper()
    fiat = FIAT_OF_RAIL.get(rail)
    if fiat is not None and cur != fiat:
        raise invalid("currency", f"{rail} pays {fiat}, not {cur}")
    if fiat is None and cur not in STABLECOINS:
        raise invalid("currency", f"{rail} moves one of {', '.join(sorted(STABLECOINS))}, not {cur}")
    return cur


async def _route(ctx: ActionContext, raw: bytes, command: type[ApproveRoute | RevokeRoute]) -> Any:
    p = decode_body(raw, schemas.Route)
    tid = await known_tenant(ctx, p.tenant_id)
    cur = check_rail_currency(p.rail, p.currency)
    ctx.details = {"mode": p.mode, "rail": p.rail, "currency": cur}
    cmd = command(command_id=new_id("cmd"), ctx=ctx.command_ctx(tid, p.mode), rail=p.rail, currency=cur)
    return await ctx.call(ctx.topics.compliance_commands, cmd)


async def approve_route(ctx: ActionContext, raw: bytes) -> Any:
    return await _route(ctx, raw, ApproveRoute)


async def revoke_route(ctx: ActionContext, raw: bytes) -> Any:
    return await _route(ctx, raw, RevokeRoute)


async def set_transfer_cap(ctx: ActionContext, raw: bytes) -> Any:
    p = decode_body(raw, schemas.TransferCap)
    tid = await known_tenant(ctx, p.tenant_id)
    per, daily = Decimal(p.per_transfer), Decimal(p.daily)
    if per <= 0:
        raise invalid("per_transfer", "per_transfer must be greater than 0")
    if daily <= 0:
        raise invalid("daily", "daily must be greater than 0")
    if per > daily:
        raise invalid("per_transfer", "per_transfer must not exceed daily")
    ctx.details = {
        "mode": p.mode,
        "per_transfer": p.per_transfer,
        "daily": p.daily,
        "review_threshold": p.review_threshold,
    }
    cmd = SetTransferCap(
        command_id=new_id("cmd"),
        ctx=ctx.command_ctx(tid, p.mode),
        per_transfer=p.per_transfer,
        daily=p.daily,
        review_threshold=p.review_threshold,
    )
    return await ctx.call(ctx.topics.compliance_commands, cmd)


def _bank_fields(p: schemas.ExternalAccount) -> dict[str, str | None]:
    """Normalise and check the bank details each rail needs (refusals name the field)."""
    iban = normalize_iban(p.iban) if p.iban else None
    bic = p.bic.upper() if p.bic else None
    if p.rail in ("ach", "wire"):
        if not p.account_number:
            raise invalid("account_number", f"{p.rail} needs account_number")
        if not p.routing_number or not aba_valid(p.routing_number):
            raise invalid("routing_number", f"{p.rail} needs a valid 9-digit ABA routing_number")
    elif p.rail == "sepa":
        if not iban or not iban_valid(iban):
            raise invalid("iban", "sepa needs a valid IBAN")
    else:  # faster_payments
        if not p.account_number or len(p.account_number) != 8:
            raise invalid("account_number", "faster_payments needs an 8-digit account_number")
        if not p.routing_number or len(p.routing_number) != 6:
            raise invalid("routing_number", "faster_payments needs a 6-digit sort code as routing_number")
    return {"account_number": p.account_number, "routing_number": p.routing_number, "iban": iban, "bic": bic}


def _last4(value: str | None) -> str | None:
    return value[-4:] if value else None


async def upsert_external_account(ctx: ActionContext, raw: bytes) -> Any:
    p = decode_body(raw, schemas.ExternalAccount)
    tid = await known_tenant(ctx, p.tenant_id)
    cur = check_rail_currency(p.rail, p.currency)
    bank = _bank_fields(p)
    ext_id = p.external_account_id or new_id("ext")
    ctx.details = {
        "mode": p.mode,
        "customer_id": p.customer_id,
        "rail": p.rail,
        "currency": cur,
        "approved": p.approved,
        "external_account_id": ext_id,
        "account_last4": _last4(bank["account_number"] or bank["iban"]),
    }
    cmd = UpsertExternalAccount(
        command_id=new_id("cmd"),
        ctx=ctx.command_ctx(tid, p.mode),
        external_account_id=ext_id,
        customer_id=p.customer_id,
        rail=p.rail,
        currency=cur,
        approved=p.approved,
        account_number=bank["account_number"],
        routing_number=bank["routing_number"],
        iban=bank["iban"],
        bic=bank["bic"],
    )
    data = await ctx.call(ctx.topics.compliance_commands, cmd)
    if isinstance(data, dict):
        data.setdefault("external_account_id", ext_id)
    return data

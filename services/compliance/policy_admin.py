"""Policy commands from the admin service: routes, caps, external accounts, and reads.

Each answers a :class:`Result` (200 + data, or an error naming the field). A change is
written in the batch's transaction and is visible to the next command, in this batch or
any later one (policy is read from PostgreSQL per batch, never cached across batches).
"""

from __future__ import annotations

import json
import logging
import re
from decimal import Decimal
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from common.contracts import Command, Result
from common.contracts.commands import (
    AddScreenedAddress,
    ApproveRoute,
    GetPolicyStatus,
    ListDecisions,
    ListScreenedAddresses,
    ReleaseAllowance,
    RemoveScreenedAddress,
    RevokeRoute,
    SetTransferCap,
    UpsertExternalAccount,
)
from common.errors import ErrorCode, ServiceError, invalid, not_found
from common.paging import page
from common.results import error_result, ok_result
from common.times import iso
from common.views import columns
from compliance import allowance, screening
from compliance import repository as repo
from compliance.models import ComplianceCap, ComplianceRoute
from compliance.rules import PAYMENT_RAILS, parse_amount
from compliance.snapshot import Snapshot

log = logging.getLogger(__name__)

_CURRENCY = re.compile(r"^[A-Z]{3,5}$")


def _rail(value: str) -> str:
    rail = value.strip().lower()
    if rail not in PAYMENT_RAILS:
        raise invalid("rail", f"rail must be one of {', '.join(sorted(PAYMENT_RAILS))}")
    return rail


def _currency(value: str) -> str:
    cur = value.strip().upper()
    if not _CURRENCY.match(cur):
        raise invalid("currency", "currency must be a 3 to 5 letter code")
    return cur


def _positive(field: str, value: str) -> Decimal:
    amount = parse_amount(value)
    if amount is None:
        raise invalid(field, f"{field} must be a decimal string above zero")
    return amount


def _route_data(row: Any) -> dict[str, Any]:
    return columns(row, "tenant_id", "mode", "rail", "currency", "approved", "updated_at")


async def _set_route(
    session: AsyncSession, snap: Snapshot, cmd: ApproveRoute | RevokeRoute, approved: bool
) -> dict[str, Any]:
    t, m = cmd.ctx.tenant_id, cmd.ctx.mode
    route = ComplianceRoute(
        **cmd.ctx.owner,
        rail=_rail(cmd.rail),
        currency=_currency(cmd.currency),
        approved=approved,
        updated_by=cmd.ctx.actor,
    )
    row = await repo.set_route(session, route)
    snap.forget_policy(t, m)
    return _route_data(row)


async def approve_route(session: AsyncSession, snap: Snapshot, cmd: ApproveRoute) -> dict[str, Any]:
    return await _set_route(session, snap, cmd, True)


async def revoke_route(session: AsyncSession, snap: Snapshot, cmd: RevokeRoute) -> dict[str, Any]:
    return await _set_route(session, snap, cmd, False)


async def set_transfer_cap(session: AsyncSession, snap: Snapshot, cmd: SetTransferCap) -> dict[str, Any]:
    per_transfer = _positive("per_transfer", cmd.per_transfer)
    daily = _positive("daily", cmd.daily)
    threshold = None
    if cmd.review_threshold is not None:
        try:
            threshold = Decimal(cmd.review_threshold)
        except ArithmeticError:
            threshold = None
        if threshold is None or not threshold.is_finite() or threshold < 0:
            raise invalid("review_threshold", "review_threshold must be a decimal string of zero or more")
    cap = ComplianceCap(
        **cmd.ctx.owner,
        per_transfer=per_transfer,
        daily=daily,
        review_threshold=threshold,
        updated_by=cmd.ctx.actor,
    )
    row = await repo.set_cap(session, cap)
    snap.forget_policy(cmd.ctx.tenant_id, cmd.ctx.mode)
    return {
        "tenant_id": row.tenant_id,
        "mode": row.mode,
        "per_transfer": format(row.per_transfer.normalize(), "f"),
        "daily": format(row.daily.normalize(), "f"),
        "review_threshold": (
            None if row.review_threshold is None else format(row.review_threshold.normalize(), "f")
        ),
        "updated_at": iso(row.updated_at),
    }


def external_account_data(row: Any) -> dict[str, Any]:
    return {
        "external_account_id": row["id"],
        "tenant_id": row["tenant_id"],
        "mode": row["mode"],
        "customer_id": row["customer_id"],
        "rail": row["rail"],
        "currency": row["currency"],
        "approved": row["approved"],
        "account_number": row["account_number"],
        "routing_number": row["routing_number"],
        "iban": row["iban"],
        "bic": row["bic"],
        "created_at": iso(row["created_at"]),
        "updated_at": iso(row["updated_at"]),
    }


async def upsert_external_account(
    session: AsyncSession, snap: Snapshot, cmd: UpsertExternalAccount
) -> dict[str, Any]:
    t, m = cmd.ctx.tenant_id, cmd.ctx.mode
    customer = snap.party(t, m, cmd.customer_id)
    if customer is None or customer.kind != "customer":
        raise not_found("customer")
    row = await repo.upsert_external_account(
        session,
        {
            "id": cmd.external_account_id,
            "tenant_id": t,
            "mode": m,
            "customer_id": cmd.customer_id,
            "rail": _rail(cmd.rail),
            "currency": _currency(cmd.currency),
            "approved": cmd.approved,
            "account_number": cmd.account_number,
            "routing_number": cmd.routing_number,
            "iban": cmd.iban,
            "bic": cmd.bic,
            "updated_by": cmd.ctx.actor,
        },
    )
    if row is None:  # the id belongs to another tenant or mode: do not reveal it
        raise not_found("external account")
    snap.remember_external(row)
    snap.register(t, m, cmd.external_account_id, "external_account", cmd.customer_id)
    return external_account_data(row._mapping)


async def list_decisions(session: AsyncSession, snap: Snapshot, cmd: ListDecisions) -> dict[str, Any]:
    limit = min(max(cmd.limit, 1), 100)
    rows = await repo.list_decisions(session, cmd.target_tenant_id, cmd.starting_after, limit + 1)
    return page(rows, limit, _decision_view)


def _decision_view(r: Any) -> dict[str, Any]:
    shown = columns(r, "id", decision_id="id", request_id="request_id", command_id="command_id")
    return shown | {
        **columns(r, "tenant_id", "mode", "command_type", "outcome", "rule", "reason"),
        "inputs": r.inputs if not isinstance(r.inputs, str) else json.loads(r.inputs),
        "created_at": iso(r.created_at),
    }


async def policy_status(session: AsyncSession, snap: Snapshot, cmd: GetPolicyStatus) -> dict[str, Any]:
    route, cap = await repo.policy_status(session, cmd.ctx.tenant_id)
    return {"tenant_id": cmd.ctx.tenant_id, "production_route_approved": route, "production_cap_set": cap}


async def release_allowance(session: AsyncSession, snap: Snapshot, cmd: ReleaseAllowance) -> dict[str, Any]:
    released = await allowance.release_failed(
        session, [(cmd.transfer_id, cmd.failed_command_id, cmd.ctx.tenant_id)]
    )
    if released:
        log.info("gave back %s of daily cap for refused transfer %s", released, cmd.transfer_id)
    return {"transfer_id": cmd.transfer_id, "released": bool(released)}


HANDLERS: dict[type, Any] = {
    ApproveRoute: approve_route,
    RevokeRoute: revoke_route,
    SetTransferCap: set_transfer_cap,
    UpsertExternalAccount: upsert_external_account,
    ListDecisions: list_decisions,
    GetPolicyStatus: policy_status,
    ReleaseAllowance: release_allowance,
    AddScreenedAddress: screening.add,
    RemoveScreenedAddress: screening.remove,
    ListScreenedAddresses: screening.listed,
}


async def handle(session: AsyncSession, snap: Snapshot, cmd: Command) -> Result:
    """Run one policy command in a savepoint; a refusal rolls back only its own writes.

    Store errors propagate (the batch fails closed); request errors become the answer.
    """
    handler = HANDLERS.get(type(cmd))
    try:
        if handler is None:
            raise ServiceError(ErrorCode.INVALID_REQUEST, f"unsupported command {type(cmd).__name__}")
        async with session.begin_nested():
            data = await handler(session, snap, cmd)
    except ServiceError as err:
        return error_result(cmd, err)
    return ok_result(cmd, data)

"""Operator roles and four eyes: no single operator moves money or grants trust alone
(docs/security.md, "Round 5: no single point of trust").

Every operator token has a role, given where the tokens are configured
(``SLUICE_ADMIN_TOKEN`` entries ``name:role=token``; an entry without a role is an approver, so
older settings keep working):

- ``viewer`` reads (gets, lists, reconcile, verify the journal);
- ``operator`` also acts, where the action moves no money and grants no trust (upsert a tenant,
  revoke a key or a token, disable a tenant, revoke a route, screen an address, replay
  deliveries);
- ``approver`` may do everything, and approves.

With four eyes on (the default in production; ``SLUICE_ADMIN_FOUR_EYES`` overrides), an action
that moves money or grants trust (:data:`FOUR_EYES`, and creating an API key or issuing an
access token for live mode) is not carried out when an approver sends it: it is kept as a
proposal (202 ``{action_id, state: "pending_approval"}``) and carried out, as proposed, when a
*different* approver sends ``approve_action {action_id}``, within 24 hours. Both steps are
audited; the proposal's body is kept in admin's database, never in a log.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec

from admin import repository as repo
from admin import schemas
from admin.context import ActionContext
from common.errors import ErrorCode, ServiceError, not_found
from common.ids import new_id
from common.times import iso
from common.validation import decode_body

PROPOSAL_TTL = timedelta(hours=24)
#: What a viewer may run: nothing here changes anything.
READS = frozenset(
    {
        "get_tenant",
        "list_tenants",
        "list_audit_log",
        "list_dead_letters",
        "list_deliveries",
        "list_decisions",
        "list_screened_addresses",
        "list_pending_actions",
        "reconcile",
        "verify_journal",
    }
)
#: Actions that move money or grant trust: an approver's, and under four eyes two approvers'.
FOUR_EYES = frozenset(
    {
        "review_transfer",
        "settle_transfer",
        "enable_live",
        "enable_tenant",
        "approve_route",
        "set_transfer_cap",
        "upsert_external_account",
        "remove_screened_address",
        "redrive_dead_letters",
    }
)
#: Credentials are trust in live mode only (sandbox keys move no real money).
LIVE_ONLY = frozenset({"create_api_key", "issue_access_token"})
APPROVER_ONLY = frozenset({"approve_action"})


class _Mode(msgspec.Struct):
    mode: str | None = None


def grants_trust(action: str, raw: bytes) -> bool:
    """Whether ``action`` (with its body ``raw``) moves money or grants trust. A credential is
    live unless its body says sandbox (fail closed: a mode left out may be the live one)."""
    if action in FOUR_EYES:
        return True
    if action in LIVE_ONLY:
        try:
            return msgspec.json.decode(raw, type=_Mode).mode != "sandbox"
        except (msgspec.DecodeError, msgspec.ValidationError):
            return True
    return False


def check_role(role: str, action: str, raw: bytes) -> None:
    """403 ``role_forbidden`` unless ``role`` may send ``action``."""
    if role == "approver":
        return
    allowed = (
        action in READS if role == "viewer" else not (grants_trust(action, raw) or action in APPROVER_ONLY)
    )
    if not allowed:
        raise ServiceError(
            ErrorCode.FORBIDDEN,
            f"the {role} role may not {action}",
            details={"reason": "role_forbidden", "role": role, "action": action},
        )


def needs_approval(four_eyes: bool, action: str, raw: bytes) -> bool:
    return four_eyes and grants_trust(action, raw)


async def propose(ctx: ActionContext, raw: bytes, *, action: str) -> dict[str, Any]:
    """Keep ``action`` as a proposal for another approver (the request is validated by the
    action itself when approved; it is kept as sent)."""
    action_id = new_id("act")
    expires = datetime.now(UTC) + PROPOSAL_TTL
    await repo.propose_action(
        ctx.session, id=action_id, action=action, body=raw, proposed_by=ctx.actor, expires_at=expires
    )
    ctx.target = action_id
    ctx.details = {"proposed": action}
    ctx.status = 202
    return {"action_id": action_id, "action": action, "state": "pending_approval", "expires_at": iso(expires)}


Run = Callable[[ActionContext, bytes], Awaitable[Any]]


async def approve_action(ctx: ActionContext, raw: bytes, run: Callable[[str], Run]) -> dict[str, Any]:
    """Carry out a proposal of another approver, as proposed (``run`` finds the action)."""
    p = decode_body(raw, schemas.ApproveAction)
    row = await repo.lock_pending_action(ctx.session, p.action_id)
    if row is None:
        raise not_found("pending action")
    if row.state != "pending_approval":
        raise ServiceError(
            ErrorCode.INVALID_REQUEST, f"the action is {row.state}", details={"reason": row.state}
        )
    if row.expires_at <= datetime.now(UTC):
        await repo.decide_pending_action(ctx.session, row.id, "expired", None)
        raise ServiceError(ErrorCode.INVALID_REQUEST, "the proposal expired", details={"reason": "expired"})
    if row.proposed_by == ctx.actor:
        raise ServiceError(
            ErrorCode.FORBIDDEN,
            "a proposal is approved by another approver",
            details={"reason": "same_operator"},
        )
    await repo.decide_pending_action(ctx.session, row.id, "approved", ctx.actor)
    data = await run(row.action)(ctx, bytes(row.body))
    ctx.details = {**ctx.details, "action_id": row.id, "approved": row.action, "proposed_by": row.proposed_by}
    return {"action_id": row.id, "action": row.action, "state": "approved", "result": data}


async def list_pending_actions(ctx: ActionContext, raw: bytes) -> dict[str, Any]:
    p = decode_body(raw, schemas.ListPendingActions)
    rows = await repo.list_pending_actions(ctx.session, p.limit)
    return {
        "items": [
            {
                "action_id": r.id,
                "action": r.action,
                "proposed_by": r.proposed_by,
                "proposed_at": iso(r.proposed_at),
                "expires_at": iso(r.expires_at),
            }
            for r in rows
        ]
    }


def approvers(roles: list[str]) -> int:
    return sum(1 for r in roles if r == "approver")

"""The action table of the administration endpoint (docs/operations.md, "The administration
endpoint").

Each action takes the :class:`ActionContext` and the raw body and returns ``data``; the
boundary (``admin.app``) owns the transaction, the audit entry and the after-commit effects.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from admin import repository as repo
from admin import schemas
from admin.actions import dead_letters, keys, operations, policy, tenants
from admin.context import ActionContext
from admin.operators import four_eyes
from common.errors import ErrorCode, ServiceError
from common.paging import page, seq_cursor
from common.validation import decode_body

Action = Callable[[ActionContext, bytes], Awaitable[Any]]


async def list_audit_log(ctx: ActionContext, raw: bytes) -> dict[str, Any]:
    p = decode_body(raw, schemas.ListAuditLog)
    after = seq_cursor(p.after, "list_audit_log")
    rows = await repo.list_audit(ctx.session, p.limit, after, p.actor, p.audit_action, p.target)
    return page(rows, p.limit, repo.audit_dict)


async def approve_action(ctx: ActionContext, raw: bytes) -> dict[str, Any]:
    return await four_eyes.approve_action(ctx, raw, ACTIONS.__getitem__)


ACTIONS: dict[str, Action] = {
    "upsert_tenant": tenants.upsert_tenant,
    "get_tenant": tenants.get_tenant,
    "list_tenants": tenants.list_tenants,
    "enable_live": tenants.enable_live,
    "create_api_key": keys.create_api_key,
    "revoke_api_key": keys.revoke_api_key,
    "issue_access_token": keys.issue_access_token,
    "revoke_access_token": keys.revoke_access_token,
    "disable_tenant": tenants.disable_tenant,
    "enable_tenant": tenants.enable_tenant,
    "approve_route": policy.approve_route,
    "revoke_route": policy.revoke_route,
    "set_transfer_cap": policy.set_transfer_cap,
    "upsert_external_account": policy.upsert_external_account,
    "list_audit_log": list_audit_log,
    "list_dead_letters": dead_letters.list_dead_letters,
    "redrive_dead_letters": dead_letters.redrive_dead_letters,
    **operations.RELAYED,
    "approve_action": approve_action,
    "list_pending_actions": four_eyes.list_pending_actions,
}


def action_of(raw: bytes) -> str:
    action = decode_body(raw, schemas.Action).action
    if action not in ACTIONS:
        raise ServiceError(
            ErrorCode.INVALID_REQUEST,
            f"unknown action {action[:64]!r}",
            details={"field": "action", "allowed": sorted(ACTIONS)},
        )
    return action

"""Operator roles and four eyes (docs/security.md, "no single point of trust"), on an admin
of their own (that admin refusing to start with one approver is a process's exit:
tests/integration/test_four_eyes.py).

On main every operator token could run every action, alone. Now a viewer only reads, an
operator acts where no money moves and no trust is granted, and with four eyes on an
approver's money-or-trust action waits for a second approver: its effect is absent until
then, the proposer cannot approve it, and both steps are in the audit log.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import httpx
import pytest

from tests.conftest import Stack, make_tenant
from tests.support.db import pg_connect
from tools.stack.processes import free_port
from tools.stack.suite import Proc

pytestmark = [pytest.mark.inprocess, pytest.mark.timeout(600)]

TOKENS = {name: f"{name}-" + secrets.token_urlsafe(32) for name in ("watch", "ops", "alice", "bob")}
ROLES = {"watch": "viewer", "ops": "operator", "alice": "approver", "bob": "approver"}


@pytest.fixture(scope="module")
def admin(stack: Stack) -> Iterator[Proc]:
    tokens = ",".join(f"{n}:{ROLES[n]}={t}" for n, t in TOKENS.items())
    extra = {"SLUICE_ADMIN_FOUR_EYES": "true", "SLUICE_ADMIN_TOKEN": tokens}
    proc = stack.suite.start("admin", free_port(), extra, instance="admin-four-eyes")
    try:
        stack.suite.wait_ready([proc], 120)
        yield proc
    finally:
        stack.suite.stop_proc(proc)


def act(proc: Proc, who: str, action: str, **fields: Any) -> httpx.Response:
    return httpx.post(
        proc.url + "/",
        json={"action": action, **fields},
        headers={"Authorization": f"Bearer {TOKENS[who]}"},
        timeout=30,
    )


def refused(r: httpx.Response, status: int, reason: str) -> None:
    assert r.status_code == status, r.text
    assert r.json()["error"]["details"]["reason"] == reason, r.text


def test_each_role_does_what_it_may_and_nothing_more(stack: Stack, admin: Proc) -> None:
    tenant = make_tenant(stack)
    assert act(admin, "watch", "get_tenant", tenant_id=tenant.tenant_id).status_code == 200
    refused(act(admin, "watch", "disable_tenant", tenant_id=tenant.tenant_id), 403, "role_forbidden")
    refused(act(admin, "ops", "enable_live", tenant_id=tenant.tenant_id), 403, "role_forbidden")
    refused(act(admin, "ops", "approve_action", action_id="act_x"), 403, "role_forbidden")
    live_key = {"tenant_id": tenant.tenant_id, "key_label": "k", "scopes": ["customers:write"]}
    refused(act(admin, "ops", "create_api_key", **live_key, mode="production"), 403, "role_forbidden")
    assert act(admin, "ops", "create_api_key", **live_key, mode="sandbox").status_code == 200
    assert act(admin, "ops", "disable_tenant", tenant_id=tenant.tenant_id).status_code == 200
    route = {"tenant_id": tenant.tenant_id, "rail": "ach", "currency": "USD", "mode": "sandbox"}
    assert act(admin, "ops", "revoke_route", **route).status_code == 200


async def test_a_money_action_takes_effect_only_when_a_second_approver_approves(
    stack: Stack, admin: Proc
) -> None:
    tenant = make_tenant(stack)
    cap = {"tenant_id": tenant.tenant_id, "mode": "sandbox", "per_transfer": "5.00", "daily": "50.00"}
    proposed = act(admin, "alice", "set_transfer_cap", **cap)
    assert proposed.status_code == 202, proposed.text
    data = proposed.json()["data"]
    assert data["state"] == "pending_approval" and data["action"] == "set_transfer_cap"
    action_id = data["action_id"]
    db = await pg_connect(stack.stores.database_url)
    try:
        stored = "SELECT count(*) FROM compliance.caps WHERE tenant_id = $1"
        assert await db.fetchval(stored, tenant.tenant_id) == 0  # no effect yet
        pending = act(admin, "watch", "list_pending_actions").json()["data"]["items"]
        assert action_id in {p["action_id"] for p in pending}
        refused(act(admin, "alice", "approve_action", action_id=action_id), 403, "same_operator")
        assert await db.fetchval(stored, tenant.tenant_id) == 0
        approved = act(admin, "bob", "approve_action", action_id=action_id)
        assert approved.status_code == 200, approved.text
        assert approved.json()["data"]["state"] == "approved"
        row = await db.fetchrow(
            "SELECT per_transfer, daily FROM compliance.caps WHERE tenant_id = $1", tenant.tenant_id
        )
        assert row is not None and (row["per_transfer"], row["daily"]) == (Decimal("5"), Decimal("50"))
        refused(act(admin, "bob", "approve_action", action_id=action_id), 400, "approved")
        # both steps audited, by their operators
        audit = act(admin, "watch", "list_audit_log", limit=50).json()["data"]["items"]
        mine = [(e["actor"], e["action"], e["outcome"]) for e in audit if action_id in str(e)]
        assert ("alice", "set_transfer_cap", "proposed") in mine and ("bob", "approve_action", "ok") in mine
    finally:
        await db.close()

"""A disabled tenant is disabled everywhere (docs/security.md, "no single point of trust"), each service
learning it from admin's record (identity.tenants), not from a broadcast it may have missed.

On main only the gateway read the control event: after ``disable_tenant`` a pending delivery
kept its schedule (three more attempts reached the partner) and compliance still decided the
tenant's commands. Now compliance refuses new commands with ``tenant_disabled`` while money
arriving for the tenant is still credited, and webhooks holds the deliveries without spending
attempts, then resumes them on ``enable_tenant``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from decimal import Decimal

import pytest

from common.contracts.commands import CreateCustomer, SandboxDeposit
from common.ids import new_id
from common.topics import Topics
from tests.conftest import Stack, make_tenant
from tests.support.ledger import LedgerKit, ledger_invariants, open_kit
from tests.support.webhooks import Receiver, create_customer, deliveries_of, endpoint, wait_delivery

pytestmark = [pytest.mark.inprocess, pytest.mark.timeout(900)]


@pytest.fixture
async def kit(stack: Stack) -> AsyncIterator[LedgerKit]:
    async with open_kit(stack) as k:
        k.tenant_id = make_tenant(stack).tenant_id  # a tenant admin knows, so it can disable it
        yield k
        await ledger_invariants(k.db, k.tenant_id)


def new_customer(kit: LedgerKit) -> CreateCustomer:
    """A customer for the kit's tenant, as the gateway sends it to compliance."""
    return CreateCustomer(
        command_id=new_id("cmd"),
        ctx=kit.ctx(),
        customer_id=new_id("cus"),
        account_type="individual",
        email="ada@example.com",
        country_code="US",
        service_user_id="u-" + new_id("u"),
        full_name="Ada Lovelace",
    )


def admin_ok(stack: Stack, action: str, **fields: object) -> dict[str, object]:
    r = stack.admin_call(action, **fields)
    assert r.status_code == 200, r.text
    data: dict[str, object] = r.json()["data"]
    return data


async def test_compliance_refuses_a_disabled_tenants_commands_but_credits_its_deposits(
    stack: Stack, kit: LedgerKit
) -> None:
    w = await kit.funded_wallet("10.00")
    topics = Topics("sluice")
    admin_ok(stack, "disable_tenant", tenant_id=kit.tenant_id)
    try:
        customer = new_customer(kit)
        r = await kit.rpc.call(topics.compliance_commands, customer, key=customer.customer_id, timeout=20)
        assert r.status == 403 and r.error is not None, r
        assert r.error.details["reason"] == "tenant_disabled", r.error
        n = await kit.db.fetchval("SELECT count(*) FROM ledger.customers WHERE id = $1", customer.customer_id)
        assert n == 0
        deposit = SandboxDeposit(
            command_id=new_id("cmd"),
            ctx=kit.ctx(),
            deposit_id=new_id("dep"),
            virtual_account_id=w["virtual_account_id"],
            amount="5.00",
        )
        r = await kit.rpc.call(
            topics.compliance_commands, deposit, key=deposit.virtual_account_id, timeout=20
        )
        assert r.status == 201, r  # money arriving for it is still credited, never bounced
        assert await kit.balances(w["wallet_id"]) == (Decimal("15.00"), Decimal(0))
    finally:
        admin_ok(stack, "enable_tenant", tenant_id=kit.tenant_id)
    customer2 = new_customer(kit)
    r = await kit.rpc.call(topics.compliance_commands, customer2, key=customer2.customer_id, timeout=20)
    assert r.status == 201, r


async def test_webhooks_hold_a_disabled_tenants_deliveries_and_resume_them(stack: Stack) -> None:
    """One failed attempt, then the tenant is disabled: no attempt is spent while it is (on
    main the schedule ran on, three attempts, and the delivery died); enabled, it is delivered."""
    async with endpoint(stack, Receiver(default=500)) as (tenant, receiver, _, created):
        webhook_id = created.data["webhook_id"]
        await create_customer(tenant)
        assert len(await receiver.wait_for(1, timeout=30)) >= 1
        admin_ok(stack, "disable_tenant", tenant_id=tenant.tenant_id)
        off = time.time()
        schedule_s = max(float(x) for x in stack.env["SLUICE_WEBHOOKS_RETRY_SCHEDULE"].split(","))
        await asyncio.sleep(4 * schedule_s + 1)  # the whole schedule, and more, while disabled
        # an attempt already leased when the disable committed may still land: none after it
        late = [r for r in receiver.received if r.at > off + schedule_s]
        assert late == [], [r.at - off for r in late]
        [row] = await deliveries_of(stack, webhook_id)
        assert row["status"] == "pending" and row["attempts"] <= 2, dict(row)
        receiver.default = 200  # the partner's endpoint is back too
        admin_ok(stack, "enable_tenant", tenant_id=tenant.tenant_id)
        rows = await wait_delivery(stack, webhook_id, "succeeded", timeout=60)
        assert [(d["status"], d["last_status_code"]) for d in rows] == [("succeeded", 200)]

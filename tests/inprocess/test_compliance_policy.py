"""Compliance rules in both modes, driven through the message path (the in-process tier's
bus) against a private compliance (own topic prefix, shared PostgreSQL): each refusal reason,
the review path, the party registry, policy changes on the next command, and the kept
decisions."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Iterator

import msgspec
import pytest

from common.contracts.commands import (
    CreateCustomer,
    CreateVirtualAccount,
    CreateWallet,
    GetPolicyStatus,
    ListDecisions,
    VADestination,
    partition_key,
)
from tests.conftest import Stack
from tests.support.compliance import (
    Probe,
    decisions_of,
    private_compliance,
    production_ready,
    stamp,
    uid,
)
from tests.support.db import pg_connect

pytestmark = pytest.mark.inprocess

PREFIX = "cpol" + uuid.uuid4().hex[:6]
SANDBOX_DEFAULT_CAP = "5000"


@pytest.fixture(scope="module")
def compliance(stack: Stack) -> Iterator[None]:
    with private_compliance(stack, PREFIX, extra={"SLUICE_SANDBOX_DEFAULT_CAP": SANDBOX_DEFAULT_CAP}):
        yield


@pytest.fixture
async def probe(stack: Stack, compliance: None) -> AsyncIterator[Probe]:
    async with Probe(stack.stores.kafka_bootstrap, PREFIX, stack.stores.database_url) as p:
        yield p


async def _pair(probe: Probe, tenant: str, mode: str = "sandbox", country: str = "US") -> tuple[str, str]:
    """Two wallets of two customers of one tenant: (source wallet, destination wallet)."""
    a = await probe.wallet(tenant, await probe.customer(tenant, mode), mode)
    b = await probe.wallet(tenant, await probe.customer(tenant, mode, country), mode)
    return a, b


@pytest.mark.parametrize("mode", ["sandbox", "production"])
@pytest.mark.parametrize("country", ["DZ", "BI", "CN", "JP", "TN", "jp"])
async def test_restricted_customer_refused_in_every_mode(
    stack: Stack, probe: Probe, mode: str, country: str
) -> None:
    cmd = CreateCustomer(
        command_id=uid("cmd"),
        ctx=probe.ctx(uid("ten"), mode, live=True),
        customer_id=uid("cus"),
        account_type="business",
        email="b@example.com",
        country_code=country,
        service_user_id="u1",
        company_name="Acme",
    )
    seen = await probe.submit(cmd)
    assert seen.reply.status == 403
    assert seen.reply.error is not None and seen.reply.error.code == "forbidden"
    assert seen.reason == "jurisdiction_restricted"
    assert country.upper() in seen.reply.error.message
    [row] = await decisions_of(stack.stores.database_url, cmd.command_id)
    assert (row["outcome"], row["rule"], row["reason"]) == (
        "refuse",
        "jurisdiction",
        "jurisdiction_restricted",
    )
    assert row["request_id"] == cmd.ctx.request_id
    assert row["out_payload"]  # a refusal keeps the answer it gave


async def test_allowed_customer_is_forwarded_stamped_and_kept(stack: Stack, probe: Probe) -> None:
    cmd = probe.customer_cmd(uid("ten"), country="FR")
    fwd = (await probe.submit(cmd)).forwarded
    assert fwd.customer_id == cmd.customer_id and stamp(fwd) == ("allow", "jurisdiction")
    [row] = await decisions_of(stack.stores.database_url, cmd.command_id)
    assert row["id"] == fwd.decision.decision_id
    assert row["inputs"] and '"FR"' in json.dumps(row["inputs"])  # jsonb, decoded
    # The signed command is published once and not kept twice: the ledger keeps it.
    assert row["out_payload"] is None and row["out_topic"].endswith("ledger.commands")
    # Redelivery: the same command id is answered from the kept decision, not decided again:
    # the command stamped with it and signed again, the same command but for its grant.
    again = (await probe.submit(cmd)).forwarded
    assert again.decision == fwd.decision and again.authority is not None
    assert msgspec.structs.replace(again, authority=None) == msgspec.structs.replace(fwd, authority=None)
    assert len(await decisions_of(stack.stores.database_url, cmd.command_id)) == 1


@pytest.mark.parametrize("mode", ["sandbox", "production"])
async def test_transfer_touching_a_restricted_party_is_refused(stack: Stack, probe: Probe, mode: str) -> None:
    t = await probe.tenant()
    if mode == "production":
        await production_ready(probe, t)
    src, dst = await _pair(probe, t, mode)
    # A customer registered before its country became restricted (or through another path).
    legacy, legacy_wallet = uid("cus"), uid("wal")
    conn = await pg_connect(stack.stores.database_url)
    try:
        await conn.execute(
            "INSERT INTO compliance.parties (tenant_id, mode, party_id, kind, customer_id, country_code)"
            " VALUES ($1, $2, $3, 'customer', $3, 'CN'), ($1, $2, $4, 'wallet', $3, NULL)",
            t,
            mode,
            legacy,
            legacy_wallet,
        )
    finally:
        await conn.close()
    live = mode == "production"
    for s, d in ((src, legacy_wallet), (legacy_wallet, dst)):
        seen = await probe.submit(probe.transfer(t, s, d, "10", mode, live))
        assert seen.reason == "jurisdiction_restricted", seen
        assert seen.reply.error and seen.reply.error.details["country_code"] == "CN"
    by_customer = probe.transfer(t, src, dst, "10", mode, live)
    by_customer.source.provider_wallet_id = None
    by_customer.source.customer_id = legacy
    assert (await probe.submit(by_customer)).reason == "jurisdiction_restricted"
    # A wallet of the restricted customer cannot be created either.
    wallet = CreateWallet(
        command_id=uid("cmd"),
        ctx=probe.ctx(t, mode),
        wallet_id=uid("wal"),
        customer_id=legacy,
        symbol="USDC",
        chain="ETH",
    )
    assert (await probe.submit(wallet)).reason == "jurisdiction_restricted"
    seen = await probe.submit(probe.transfer(t, src, dst, "10", mode, live))
    assert stamp(seen.forwarded) == ("allow", "transfer_policy")


async def test_sandbox_routes_open_and_default_cap(probe: Probe) -> None:
    t = uid("ten")
    src, dst = await _pair(probe, t)
    fwd = (await probe.submit(probe.transfer(t, src, dst, "100"))).forwarded
    assert stamp(fwd) == ("allow", "transfer_policy")
    seen = await probe.submit(probe.transfer(t, src, dst, "5000.01"))
    assert seen.reason == "transfer_cap_exceeded"
    assert seen.reply.error and seen.reply.error.details["limit"] == "per_transfer"
    assert seen.reply.error.details["cap"] == SANDBOX_DEFAULT_CAP
    # The tenant's own sandbox cap replaces the default.
    await probe.set_cap(t, "50", "160", mode="sandbox")
    assert (await probe.submit(probe.transfer(t, src, dst, "60"))).reason == "transfer_cap_exceeded"
    assert (await probe.submit(probe.transfer(t, src, dst, "50"))).kind == "forward"
    seen = await probe.submit(probe.transfer(t, src, dst, "50"))
    assert seen.reason == "transfer_cap_exceeded"  # 100 + 50 used earlier today; daily 160
    assert seen.reply.error and seen.reply.error.details["limit"] == "daily"


async def test_production_refusals_in_order(probe: Probe) -> None:
    t = await probe.tenant(live=False)
    src, dst = await _pair(probe, t, "production")
    # Whether the tenant is live is admin's record, whatever the command says.
    for stamped in (False, True):
        seen = await probe.submit(probe.transfer(t, src, dst, "10", "production", live=stamped))
        assert seen.reason == "tenant_not_live"
    await probe.set_live(t, True)
    seen = await probe.submit(probe.transfer(t, src, dst, "10", "production", live=False))
    assert seen.reason == "route_not_approved"
    assert seen.reply.error and seen.reply.error.details["rail"] == "provider_wallet"
    await probe.approve_route(t, "provider_wallet", "USDC")
    seen = await probe.submit(probe.transfer(t, src, dst, "10", "production", live=True))
    assert seen.reason == "transfer_cap_exceeded"
    assert seen.reply.error and seen.reply.error.details["limit"] == "none"
    await probe.set_cap(t, "100", "150", review="80")
    assert (await probe.submit(probe.transfer(t, src, dst, "100.01", "production", True))).reason == (
        "transfer_cap_exceeded"
    )
    fwd = (await probe.submit(probe.transfer(t, src, dst, "80", "production", True))).forwarded
    assert stamp(fwd) == ("allow", "transfer_policy")
    fwd = (await probe.submit(probe.transfer(t, src, dst, "60", "production", True))).forwarded
    assert stamp(fwd) == ("allow", "transfer_policy")
    seen = await probe.submit(probe.transfer(t, src, dst, "20", "production", True))
    assert seen.reason == "transfer_cap_exceeded"  # 80 + 60 of a daily 150
    assert seen.reply.error and seen.reply.error.details["remaining"] == "10.000000"
    # Sandbox is a separate world: the production cap and routes do not apply there.
    sa, sb = await _pair(probe, t, "sandbox")
    assert (await probe.submit(probe.transfer(t, sa, sb, "900"))).kind == "forward"


async def test_review_threshold_forwards_for_review(stack: Stack, probe: Probe) -> None:
    t = await probe.tenant()
    src, dst = await _pair(probe, t, "production")
    await probe.approve_route(t, "provider_wallet", "USDC")
    await probe.set_cap(t, "1000", "10000", review="250")
    cmd = probe.transfer(t, src, dst, "250.000001", "production", True)
    fwd = (await probe.submit(cmd)).forwarded
    assert stamp(fwd) == ("review", "review_threshold")
    [row] = await decisions_of(stack.stores.database_url, cmd.command_id)
    assert row["outcome"] == "review" and row["rule"] == "review_threshold"
    assert stamp((await probe.submit(probe.transfer(t, src, dst, "250", "production", True))).forwarded) == (
        "allow",
        "transfer_policy",
    )


@pytest.mark.parametrize("mode", ["sandbox", "production"])
async def test_payout_needs_an_approved_matching_external_account(probe: Probe, mode: str) -> None:
    t, live = await probe.tenant(), mode == "production"
    owner = await probe.customer(t, mode)
    src = await probe.wallet(t, owner, mode)
    other = await probe.customer(t, mode)
    if live:
        await probe.approve_route(t, "ach", "USD")
        await probe.set_cap(t, "1000", "5000")
    approved = (await probe.external_account(t, owner, mode=mode))["external_account_id"]
    pending = (await probe.external_account(t, owner, approved=False, mode=mode))["external_account_id"]
    others = (await probe.external_account(t, other, mode=mode))["external_account_id"]
    cases = {
        "missing": probe.payout(t, src, None, "10", mode, live),
        "unknown": probe.payout(t, src, uid("ea"), "10", mode, live),
        "not_approved": probe.payout(t, src, pending, "10", mode, live),
        "other_customer": probe.payout(t, src, others, "10", mode, live),
        "currency_mismatch": probe.payout(t, src, approved, "10", mode, live, currency="EUR"),
    }
    if not live:  # in production the route check (ach, EUR) refuses first
        for problem, cmd in cases.items():
            seen = await probe.submit(cmd)
            assert seen.reason == "external_account_not_approved", (problem, seen)
            assert seen.reply.error and seen.reply.error.details["problem"] == problem
    else:
        for problem in ("missing", "unknown", "not_approved", "other_customer"):
            seen = await probe.submit(cases[problem])
            assert seen.reason == "external_account_not_approved", (problem, seen)
            assert seen.reply.error and seen.reply.error.details["problem"] == problem
        seen = await probe.submit(cases["currency_mismatch"])
        assert seen.reason == "route_not_approved"
    await probe.approve_route(t, "wire", "USD", mode=mode)
    seen = await probe.submit(probe.payout(t, src, approved, "10", mode, live, rail="wire"))
    assert seen.reply.error and seen.reply.error.details["problem"] == "rail_mismatch"
    fwd = (await probe.submit(probe.payout(t, src, approved, "10", mode, live))).forwarded
    assert fwd.kind == "payout" and stamp(fwd) == ("allow", "transfer_policy")


async def test_policy_changes_apply_to_the_next_command(probe: Probe) -> None:
    t = await probe.tenant()
    src, dst = await _pair(probe, t, "production")
    await production_ready(probe, t)
    assert (await probe.submit(probe.transfer(t, src, dst, "10", "production", True))).kind == "forward"
    await probe.revoke_route(t, "provider_wallet", "USDC")
    seen = await probe.submit(probe.transfer(t, src, dst, "10", "production", True))
    assert seen.reason == "route_not_approved"
    await probe.approve_route(t, "provider_wallet", "usdc")
    assert (await probe.submit(probe.transfer(t, src, dst, "10", "production", True))).kind == "forward"
    await probe.set_cap(t, "5", "5000")
    assert (await probe.submit(probe.transfer(t, src, dst, "10", "production", True))).reason == (
        "transfer_cap_exceeded"
    )
    # An external account approved after a refusal lets the very next payout through.
    cus = await probe.customer(t, "sandbox")
    w = await probe.wallet(t, cus)
    ea = (await probe.external_account(t, cus, approved=False))["external_account_id"]
    assert (await probe.submit(probe.payout(t, w, ea, "10"))).reason == "external_account_not_approved"
    data = await probe.external_account(t, cus, approved=True, ea_id=ea)
    assert data["approved"] is True and data["external_account_id"] == ea
    assert (await probe.submit(probe.payout(t, w, ea, "10"))).kind == "forward"


async def test_policy_commands_in_one_batch_apply_in_order(probe: Probe) -> None:
    """A route approval and the transfer right behind it, back to back on one partition.

    Kafka orders only within a partition, so the approval is sent under the transfer's key:
    whether both land in one fetched batch or in consecutive ones, the transfer must see it.
    """
    t = await probe.tenant()
    src, dst = await _pair(probe, t, "production")
    await probe.set_cap(t, "100", "1000")
    from common.contracts.commands import ApproveRoute

    approve = ApproveRoute(
        command_id=uid("cmd"),
        ctx=probe.ctx(t, "production", actor="ops"),
        rail="provider_wallet",
        currency="USDC",
    )
    transfer = probe.transfer(t, src, dst, "10", "production", True)
    approve_fut = await probe.publish(approve, key=partition_key(transfer))
    seen = await probe.submit(transfer)
    assert (await approve_fut).reply.status == 200
    assert seen.kind == "forward"


async def test_wallet_and_virtual_account_register_parties(probe: Probe) -> None:
    t = uid("ten")
    cus = await probe.customer(t)
    wal = await probe.wallet(t, cus)
    va = CreateVirtualAccount(
        command_id=uid("cmd"),
        ctx=probe.ctx(t),
        virtual_account_id=uid("va"),
        customer_id=cus,
        currency="USD",
        destination=VADestination(rail="provider_wallet", currency="USDC", provider_wallet_id=wal),
    )
    assert stamp((await probe.submit(va)).forwarded) == ("allow", "owner_jurisdiction")
    # Unknown ids go on to the ledger (which answers not_found) when nothing else refuses.
    fwd = (await probe.submit(probe.transfer(t, uid("wal"), uid("wal"), "1"))).forwarded
    assert fwd.decision is not None


async def test_invalid_policy_input_names_the_field(probe: Probe) -> None:
    from common.contracts.commands import ApproveRoute, SetTransferCap

    t = uid("ten")
    bad_rail = ApproveRoute(
        command_id=uid("cmd"), ctx=probe.ctx(t, "production"), rail="pigeon", currency="USD"
    )
    r = (await probe.submit(bad_rail)).reply
    assert r.status == 400 and r.error and r.error.details["field"] == "rail"
    bad_cap = SetTransferCap(
        command_id=uid("cmd"), ctx=probe.ctx(t, "production"), per_transfer="-1", daily="10"
    )
    r = (await probe.submit(bad_cap)).reply
    assert r.status == 400 and r.error and r.error.details["field"] == "per_transfer"
    r = (await probe.submit(GetPolicyStatus(command_id=uid("cmd"), ctx=probe.ctx(t)))).reply
    assert r.data == {"tenant_id": t, "production_route_approved": False, "production_cap_set": False}
    unknown = await probe.submit(probe.payout(t, uid("wal"), uid("ea"), "1"))
    assert unknown.reason == "external_account_not_approved"
    r = (
        await probe.submit(
            SetTransferCap(
                command_id=uid("cmd"), ctx=probe.ctx(t, "production"), per_transfer="10", daily="x"
            )
        )
    ).reply
    assert r.status == 400 and r.error and r.error.details["field"] == "daily"


async def test_policy_status_and_decision_list(probe: Probe) -> None:
    t = uid("ten")
    status = GetPolicyStatus(command_id=uid("cmd"), ctx=probe.ctx(t, "sandbox"))
    await production_ready(probe, t)
    r = (await probe.submit(status)).reply
    assert r.data["production_route_approved"] is True and r.data["production_cap_set"] is True
    src, dst = await _pair(probe, t)
    refused = await probe.submit(probe.transfer(t, src, dst, "999999"))
    assert refused.reason == "transfer_cap_exceeded"
    page = await probe.ok(
        ListDecisions(command_id=uid("cmd"), ctx=probe.ctx("admin"), limit=3, target_tenant_id=t)
    )
    assert [i["command_type"] for i in page["items"]] == ["CreateTransfer", "CreateWallet", "CreateCustomer"]
    first = page["items"][0]
    assert first["outcome"] == "refuse" and first["reason"] == "transfer_cap_exceeded"
    assert first["rule"] == "transfer_cap" and first["inputs"]["amount"] == "999999"
    assert first["request_id"] and first["created_at"]
    assert page["next_cursor"] == page["items"][-1]["id"]
    rest = await probe.ok(
        ListDecisions(
            command_id=uid("cmd"),
            ctx=probe.ctx("admin"),
            limit=10,
            target_tenant_id=t,
            starting_after=page["next_cursor"],
        )
    )
    assert [i["command_type"] for i in rest["items"]] == ["CreateWallet", "CreateCustomer"]
    assert rest["next_cursor"] is None
    assert {i["tenant_id"] for i in page["items"] + rest["items"]} == {t}

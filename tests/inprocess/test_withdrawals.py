"""External on-chain withdrawals with address screening (docs/guides/money.md, "Withdrawing to
an external address"): the gateway checks the address, compliance screens it, the ledger holds,
settles out of the suite or releases; operators manage the screening list and settle in
production."""

from __future__ import annotations

import secrets
import uuid
from decimal import Decimal
from typing import Any

import pytest

from common.addresses import b58check_encode, b58encode, eip55
from tests.conftest import Stack, Tenant, make_tenant
from tests.support.db import fetch, run_async
from tests.support.flows import created, funded, send, wait_state
from tests.support.ledger import LedgerKit, ledger_invariants, open_kit, seed_production_deposit

pytestmark = [pytest.mark.inprocess, pytest.mark.timeout(900)]  # the first test may start the stack


def _withdrawal(
    wallet_id: str, address: str, amount: str, chain: str = "base", currency: str = "USDC"
) -> dict[str, Any]:
    destination = {"payment_rail": "stablecoin", "currency": currency, "address": address, "chain": chain}
    return {
        "source": {
            "payment_rail": "provider_wallet",
            "currency": currency,
            "amount": amount,
            "provider_wallet_id": wallet_id,
        },
        "destination": destination,
        "idempotency_key": uuid.uuid4().hex,
    }


def _balances(t: Tenant, wallet_id: str) -> tuple[Decimal, Decimal]:
    w = t.get(f"/v1/wallets/{wallet_id}").json()["data"]
    return Decimal(w["available_balance"]), Decimal(w["held_balance"])


def _outside() -> str:
    return "0x" + secrets.token_hex(20)


def test_a_withdrawal_leaves_the_suite_pending_then_completed(stack: Stack) -> None:
    t = make_tenant(stack, rate_limit=10000)
    a = funded(t, "100.00")
    tr = created(send(t, "/v1/transfers", _withdrawal(a["wallet_id"], _outside(), "40")))
    assert tr["state"] == "pending", tr
    assert _balances(t, a["wallet_id"]) == (Decimal(60), Decimal(40))  # held while pending
    done = wait_state(t, f"/v1/transfers/{tr['transfer_id']}", "completed", wait_s=30)
    assert done["destination"]["payment_rail"] == "stablecoin"
    assert _balances(t, a["wallet_id"]) == (Decimal(60), Decimal(0))
    settled = run_async(
        fetch(
            stack.stores.database_url,
            "SELECT coalesce(sum(p.amount), 0) AS s FROM ledger.postings p JOIN ledger.accounts a"
            " ON a.id = p.account_id WHERE a.tenant_id = $1 AND a.kind = 'settlement'",
            t.tenant_id,
        )
    )
    assert settled[0]["s"] == Decimal(40)  # out of the suite through its settlement account

    failing = created(
        send(t, "/v1/transfers", _withdrawal(a["wallet_id"], _outside(), "10.51"))
    )  # x.51 fails
    wait_state(t, f"/v1/transfers/{failing['transfer_id']}", "failed", wait_s=30)
    assert _balances(t, a["wallet_id"]) == (Decimal(60), Decimal(0))  # the hold released


def test_a_screened_address_is_refused_with_nothing_held(stack: Stack) -> None:
    t = make_tenant(stack, rate_limit=10000)
    a = funded(t, "100.00")
    address = eip55(_outside())
    r = stack.admin_call(
        "add_screened_address", chain="BASE", address=address, reason="sanctions list 2026-11"
    )
    assert r.status_code == 200, r.text
    listed = stack.admin_call("list_screened_addresses", limit=100).json()["data"]["items"]
    assert {"chain": "BASE", "address": address.lower()} in [
        {k: i[k] for k in ("chain", "address")} for i in listed
    ]
    for form in (address, address.lower()):  # EVM compares case-insensitively
        refused = send(t, "/v1/transfers", _withdrawal(a["wallet_id"], form, "40"))
        assert refused.status_code == 403, refused.text
        assert refused.json()["error"]["details"]["reason"] == "address_screened", refused.text
    assert _balances(t, a["wallet_id"]) == (Decimal(100), Decimal(0))
    gone = stack.admin_call("remove_screened_address", chain="BASE", address=address)
    assert gone.status_code == 200, gone.text
    assert stack.admin_call("remove_screened_address", chain="BASE", address=address).status_code == 404
    created(send(t, "/v1/transfers", _withdrawal(a["wallet_id"], address, "40")))  # no longer screened
    bad = stack.admin_call("add_screened_address", chain="BASE", address="0x1234", reason="x")
    assert bad.status_code == 400 and bad.json()["error"]["details"]["field"] == "address", bad.text


def test_malformed_addresses_are_400_on_destination_address(stack: Stack) -> None:
    t = make_tenant(stack, rate_limit=10000)
    a = funded(t, "100.00")
    good = eip55("0x" + "ab" * 20)
    flipped = good[:-1] + good[-1].swapcase() if good[-1].isalpha() else good.replace("A", "a", 1)
    tron_good = b58check_encode(b"\x41" + secrets.token_bytes(20))
    cases = [
        (flipped, "base", "USDC"),  # fails its EIP-55 checksum
        ("0x" + "ab" * 19, "base", "USDC"),
        ("not-an-address", "base", "USDC"),
        (b58encode(b"\x01" * 31), "sol", "USDC"),  # 31 bytes
        (tron_good[:-1] + ("1" if tron_good[-1] != "1" else "2"), "tron", "USDT"),  # bad checksum
    ]
    for address, chain, currency in cases:
        r = send(t, "/v1/transfers", _withdrawal(a["wallet_id"], address, "40", chain, currency))
        assert r.status_code == 400, (address, r.text)
        assert r.json()["error"]["details"]["field"] == "destination.address", (address, r.text)
    assert _balances(t, a["wallet_id"]) == (Decimal(100), Decimal(0))


async def _production_wallet(kit: LedgerKit, amount: str) -> dict[str, Any]:
    """A production wallet funded as a bank deposit would fund it (production takes no sandbox
    deposits): one balanced entry, from the tenant's deposits account to the wallet."""
    cus = await kit.customer()
    w = await kit.wallet(cus, "USDC", "BASE")
    await seed_production_deposit(kit.db, kit.tenant_id, w["wallet_id"], amount)
    return {**w, "customer_id": cus}


async def test_operators_settle_withdrawals_in_production(stack: Stack) -> None:
    async with open_kit(stack) as kit:
        kit.mode = "production"
        w = await _production_wallet(kit, "100")
        first = await kit.ok(kit.onchain_cmd(w, _outside(), "40"))
        assert first["state"] == "pending"  # no simulator in production: it waits for an operator
        assert await kit.balances(w["wallet_id"]) == (Decimal(60), Decimal(40))

        def settle(transfer_id: str, outcome: str) -> Any:
            return stack.admin_call("settle_transfer", transfer_id=transfer_id, outcome=outcome)

        failed = settle(first["transfer_id"], "failed")
        assert failed.status_code == 200 and failed.json()["data"]["state"] == "failed", failed.text
        assert await kit.balances(w["wallet_id"]) == (Decimal(100), Decimal(0))
        again = settle(first["transfer_id"], "completed")
        assert again.status_code == 400, again.text
        assert again.json()["error"]["details"]["reason"] == "illegal_transition"

        second = await kit.ok(kit.onchain_cmd(w, _outside(), "25"))
        done = settle(second["transfer_id"], "completed")
        assert done.status_code == 200 and done.json()["data"]["state"] == "completed", done.text
        assert await kit.balances(w["wallet_id"]) == (Decimal(75), Decimal(0))
        assert settle("tr_" + uuid.uuid4().hex, "completed").status_code == 404
        await ledger_invariants(kit.db, kit.tenant_id)

"""Money end to end through the message path (the in-process tier's bus): deposits, book and
on-chain transfers, payouts, the sandbox simulator and its magic amounts, compliance review,
and refusals that change nothing. After each flow the journal balances and wallet balances
equal their postings."""

from __future__ import annotations

from collections.abc import AsyncIterator
from decimal import Decimal

import msgspec
import pytest

from tests.conftest import Stack
from tests.support.ledger import LedgerKit, allow, ledger_invariants, open_kit, seed_production_deposit

pytestmark = [pytest.mark.inprocess, pytest.mark.timeout(900)]  # the first test may start the stack

D = Decimal


@pytest.fixture
async def kit(stack: Stack) -> AsyncIterator[LedgerKit]:
    async with open_kit(stack) as k:
        await k.watch_events()
        yield k
        await ledger_invariants(k.db, k.tenant_id)


async def test_sandbox_deposit_credits_the_destination_wallet_one_to_one(kit: LedgerKit) -> None:
    w = await kit.funded_wallet("0")
    r = await kit.send(kit.deposit_cmd(w["virtual_account_id"], "250.75"))
    assert r.status == 201, r.error
    assert r.data["wallet_id"] == w["wallet_id"] and r.data["credited_currency"] == "USDC"
    assert r.data["amount"] == "250.75" and r.data["currency"] == "USD"
    assert await kit.balances(w["wallet_id"]) == (D("250.75"), D(0))
    [ev] = await kit.events_for(r.data["deposit_id"], 1)
    assert ev["type"] == "deposit.received" and ev["data"]["credited_amount"] == "250.75"
    ext = await kit.db.fetchval(
        "SELECT sum(p.amount) FROM ledger.postings p JOIN ledger.accounts a ON a.id = p.account_id"
        " WHERE a.tenant_id = $1 AND a.kind = 'deposits'",
        kit.tenant_id,
    )
    assert ext == D("-250.75")
    eur = await kit.funded_wallet("12.50", symbol="EURC")
    assert await kit.balances(eur["wallet_id"]) == (D("12.50"), D(0))


@pytest.mark.parametrize("amount", ["0", "-5.00", "1.005", "abc", "NaN", "1e13", "Infinity"])
async def test_bad_deposit_amounts_change_nothing(kit: LedgerKit, amount: str) -> None:
    w = await kit.funded_wallet("1.00")
    r = await kit.send(kit.deposit_cmd(w["virtual_account_id"], amount))
    assert r.status == 400 and r.error.code == "invalid_request" and r.error.details["field"] == "amount"
    assert await kit.balances(w["wallet_id"]) == (D("1.00"), D(0))


async def test_deposit_refused_in_production_and_for_unknown_accounts(kit: LedgerKit) -> None:
    w = await kit.funded_wallet("1.00")
    for cmd in (
        kit.deposit_cmd(w["virtual_account_id"], "5.00", mode="production"),
        kit.deposit_cmd(w["virtual_account_id"], "5.00", tenant_id="other-tenant"),
        kit.deposit_cmd("va_unknown", "5.00"),
    ):
        r = await kit.send(cmd)
        assert r.status == 404 and r.error.code == "not_found"
    assert await kit.balances(w["wallet_id"]) == (D("1.00"), D(0))


async def test_book_transfer_settles_atomically(kit: LedgerKit) -> None:
    a, b = await kit.funded_wallet("100.00"), await kit.funded_wallet("0")
    r = await kit.send(kit.book_cmd(a["wallet_id"], b["wallet_id"], "40.25"))
    assert r.status == 201 and r.data["state"] == "completed" and r.data["provider"] == "service"
    tid = r.data["transfer_id"]
    assert await kit.balances(a["wallet_id"]) == (D("59.75"), D(0))
    assert await kit.balances(b["wallet_id"]) == (D("40.25"), D(0))
    evs = await kit.events_for(tid, 1)
    # one event, in the state the create answered (the steps inside its transaction unseen)
    assert [(e["type"], e["data"]["state"], e["data"].get("previous_state")) for e in evs] == [
        ("transfer.created", "completed", None),
    ]
    got = (await kit.get("transfers", tid)).data
    assert got["state"] == "completed" and got["source"]["provider_wallet_id"] == a["wallet_id"]
    assert got["destination"]["provider_wallet_id"] == b["wallet_id"]
    assert got["created_at"] and got["updated_at"] and got["amount"] == "40.25"
    assert (await kit.get("payouts", tid)).status == 404  # a transfer is not a payout
    listed = (await kit.list("transfers")).data["items"]
    assert [t["transfer_id"] for t in listed] == [tid]


async def test_insufficient_funds_is_refused_and_changes_nothing(kit: LedgerKit) -> None:
    a, b = await kit.funded_wallet("10.00"), await kit.funded_wallet("0")
    for cmd in (
        kit.book_cmd(a["wallet_id"], b["wallet_id"], "10.000001"),
        kit.payout_cmd(a["wallet_id"], "11"),
    ):
        r = await kit.send(cmd)
        assert r.status == 400 and r.error.code == "invalid_request"
        assert r.error.details["reason"] == "insufficient_funds"
    assert await kit.balances(a["wallet_id"]) == (D("10.00"), D(0))
    assert (
        await kit.db.fetchval("SELECT count(*) FROM ledger.transfers WHERE tenant_id = $1", kit.tenant_id)
        == 0
    )
    r = await kit.send(kit.book_cmd(a["wallet_id"], b["wallet_id"], "10"))
    assert r.data["state"] == "completed"
    assert await kit.balances(a["wallet_id"]) == (D(0), D(0))


async def test_onchain_transfer_goes_pending_processing_completed(kit: LedgerKit) -> None:
    a = await kit.funded_wallet("50.00", "USDT", "TRON")
    b = await kit.funded_wallet("0", "USDT", "TRON")
    r = await kit.send(kit.onchain_cmd(a, b["deposit_address"], "20.00"))
    assert r.status == 201 and r.data["state"] == "pending", r.error
    tid = r.data["transfer_id"]
    assert await kit.balances(a["wallet_id"]) == (D("30.00"), D("20.00"))
    assert (await kit.get("wallets", a["wallet_id"])).data["held_balance"] == "20.00"
    await kit.wait_state(tid, "completed")
    assert await kit.states(tid) == ["processing", "completed"]
    assert await kit.balances(a["wallet_id"]) == (D("30.00"), D(0))
    assert await kit.balances(b["wallet_id"]) == (D("20.00"), D(0))
    evs = await kit.events_for(tid, 3)
    assert [e["data"]["state"] for e in evs] == ["pending", "processing", "completed"]


async def test_magic_amount_fails_an_onchain_transfer_and_releases_funds(kit: LedgerKit) -> None:
    a = await kit.funded_wallet("50.00")
    b = await kit.funded_wallet("0")
    r = await kit.send(kit.onchain_cmd(a, b["deposit_address"], "7.51"))
    tid = r.data["transfer_id"]
    await kit.wait_state(tid, "failed")
    assert await kit.states(tid) == ["processing", "failed"]
    assert await kit.balances(a["wallet_id"]) == (D("50.00"), D(0))
    assert await kit.balances(b["wallet_id"]) == (D(0), D(0))
    assert await kit.last_change(tid, 3) == ("transfer.updated", "failed", "processing")


async def test_onchain_source_resolution(kit: LedgerKit) -> None:
    a = await kit.funded_wallet("5.00")
    second = await kit.wallet(a["customer_id"], "USDC", "ETH")
    b = await kit.funded_wallet("0")
    r = await kit.send(kit.onchain_cmd(a, b["deposit_address"], "1.00"))
    assert r.status == 400 and r.error.details["field"] == "source.from_address"
    r = await kit.send(kit.onchain_cmd(a, b["deposit_address"], "1.00", from_address=a["deposit_address"]))
    assert r.status == 201
    r = await kit.send(
        kit.onchain_cmd(a, b["deposit_address"], "1.00", provider_wallet_id=second["wallet_id"])
    )
    assert r.error.details["reason"] == "insufficient_funds"
    sol = await kit.funded_wallet("0", "USDC", "SOL")
    r = await kit.send(kit.onchain_cmd(a, sol["deposit_address"], "1.00", from_address=a["deposit_address"]))
    assert r.status == 400 and r.error.details["field"] == "destination.chain"
    # An address that is no wallet of the tenant is a withdrawal out of the suite
    # (docs/guides/money.md, "Withdrawing to an external address"), if it is an address of the
    # source's chain at all.
    r = await kit.send(kit.onchain_cmd(a, "0x" + "1" * 40, "1.00", from_address=a["deposit_address"]))
    assert r.status == 201 and r.data["state"] == "pending", r
    r = await kit.send(kit.onchain_cmd(a, "0x" + "1" * 39, "1.00", from_address=a["deposit_address"]))
    assert r.status == 400 and r.error.details["field"] == "destination.address"


async def test_transfer_validation(kit: LedgerKit) -> None:
    a, b = await kit.funded_wallet("5.00"), await kit.funded_wallet("0")
    eur = await kit.funded_wallet("5.00", symbol="EURC")
    usdt = await kit.funded_wallet("0", "USDT", "ETH")
    cases = [
        (kit.book_cmd(a["wallet_id"], a["wallet_id"], "1"), 400, "destination"),
        (kit.book_cmd(a["wallet_id"], usdt["wallet_id"], "1"), 400, "destination.currency"),
        (kit.book_cmd(eur["wallet_id"], eur["wallet_id"], "1", "EURC"), 400, "source.currency"),
        (kit.book_cmd(a["wallet_id"], "wal_nope", "1"), 404, "destination.provider_wallet_id"),
        (kit.book_cmd("wal_nope", b["wallet_id"], "1"), 404, "source.provider_wallet_id"),
        (kit.book_cmd(a["wallet_id"], b["wallet_id"], "1.0000001"), 400, "source.amount"),
        (kit.book_cmd(a["wallet_id"], b["wallet_id"], "0"), 400, "source.amount"),
        (
            kit.book_cmd(a["wallet_id"], b["wallet_id"], "1", tenant_id="another"),
            404,
            "source.provider_wallet_id",
        ),
        (kit.payout_cmd(a["wallet_id"], "1", rail="sepa", fiat="USD"), 400, "destination.currency"),
        (kit.payout_cmd(a["wallet_id"], "1", rail="sepa", fiat="EUR"), 400, "destination.currency"),
        (kit.payout_cmd(a["wallet_id"], "1", rail="swift"), 400, "destination.payment_rail"),
    ]
    for cmd, status, field in cases:
        r = await kit.send(cmd)
        assert (r.status, r.error and r.error.details.get("field")) == (status, field), (cmd, r)
    unstamped = msgspec.structs.replace(kit.book_cmd(a["wallet_id"], b["wallet_id"], "1"), decision=None)
    r = await kit.send(unstamped)
    # signed by compliance but without its decision: refused before the ledger plans anything
    assert r.status == 403 and r.error.details == {"reason": "authority_invalid", "why": "no_decision"}
    assert await kit.balances(a["wallet_id"]) == (D("5.00"), D(0))
    assert (
        await kit.db.fetchval("SELECT count(*) FROM ledger.transfers WHERE tenant_id = $1", kit.tenant_id)
        == 0
    )


async def test_payout_holds_then_completes_to_the_external_payouts_account(kit: LedgerKit) -> None:
    a = await kit.funded_wallet("100.00")
    r = await kit.send(kit.payout_cmd(a["wallet_id"], "60.00"))
    assert r.status == 201 and r.data["state"] == "pending"
    pid = r.data["transfer_id"]
    assert await kit.balances(a["wallet_id"]) == (D("40.00"), D("60.00"))
    await kit.wait_state(pid, "completed")
    assert await kit.balances(a["wallet_id"]) == (D("40.00"), D(0))
    paid = await kit.db.fetchval(
        "SELECT sum(p.amount) FROM ledger.postings p JOIN ledger.accounts a ON a.id = p.account_id"
        " WHERE a.tenant_id = $1 AND a.kind = 'payouts'",
        kit.tenant_id,
    )
    assert paid == D("60.00")
    evs = await kit.events_for(pid, 3)
    assert [(e["type"], e["data"]["state"]) for e in evs] == [
        ("payout.created", "pending"),
        ("payout.updated", "processing"),
        ("payout.updated", "completed"),
    ]
    assert (await kit.get("payouts", pid)).data["state"] == "completed"
    assert (await kit.get("transfers", pid)).status == 404
    await kit.db.execute("SELECT pg_sleep(1.5)")  # no return for an ordinary amount
    assert await kit.state(pid) == "completed"


async def test_magic_amounts_return_or_fail_a_payout(kit: LedgerKit) -> None:
    a = await kit.funded_wallet("100.00")
    ret = (await kit.send(kit.payout_cmd(a["wallet_id"], "10.52"))).data["transfer_id"]
    fail = (await kit.send(kit.payout_cmd(a["wallet_id"], "20.51"))).data["transfer_id"]
    await kit.wait_state(fail, "failed")
    await kit.wait_state(ret, "returned")
    assert await kit.states(ret) == ["processing", "completed", "returned"]
    assert await kit.states(fail) == ["processing", "failed"]
    assert await kit.balances(a["wallet_id"]) == (D("100.00"), D(0))
    assert await kit.last_change(ret, 4) == ("payout.updated", "returned", "completed")


async def test_review_holds_funds_until_an_operator_decides(kit: LedgerKit) -> None:
    a, b = await kit.funded_wallet("100.00"), await kit.funded_wallet("0")
    review = allow("review")
    book = (await kit.send(kit.book_cmd(a["wallet_id"], b["wallet_id"], "10", decision=review))).data
    payout = (await kit.send(kit.payout_cmd(a["wallet_id"], "20", decision=allow("review")))).data
    rejected = (await kit.send(kit.payout_cmd(a["wallet_id"], "30", decision=allow("review")))).data
    assert {book["state"], payout["state"], rejected["state"]} == {"in_review"}
    await kit.db.execute("SELECT pg_sleep(1.5)")  # the simulator leaves in_review alone
    assert await kit.balances(a["wallet_id"]) == (D("40"), D("60"))
    r = await kit.send(kit.review_cmd(book["transfer_id"], "approve"))
    assert r.status == 200 and r.data["state"] == "completed"
    assert await kit.states(book["transfer_id"]) == ["in_review", "processing", "completed"]
    r = await kit.send(kit.review_cmd(payout["transfer_id"], "approve", tenant_id="", actor="ops"))
    assert r.status == 200 and r.data["state"] == "processing"
    r = await kit.send(kit.review_cmd(rejected["transfer_id"], "reject"))
    assert r.data["state"] == "rejected"
    await kit.wait_state(payout["transfer_id"], "completed")
    assert await kit.balances(a["wallet_id"]) == (D("70"), D(0))
    assert await kit.balances(b["wallet_id"]) == (D("10"), D(0))
    evs = await kit.events_for(rejected["transfer_id"], 2)
    assert [(e["data"]["state"], e["data"].get("previous_state")) for e in evs] == [
        ("in_review", None),
        ("rejected", "in_review"),
    ]
    # Deciding again is an illegal transition, refused and changing nothing.
    for tid, decision in ((rejected["transfer_id"], "approve"), (book["transfer_id"], "reject")):
        r = await kit.send(kit.review_cmd(tid, decision))
        assert r.status == 400 and r.error.details["reason"] == "illegal_transition"
    r = await kit.send(kit.review_cmd(rejected["transfer_id"], "approve", tenant_id="other"))
    assert r.status == 404
    assert await kit.balances(a["wallet_id"]) == (D("70"), D(0))


async def test_production_transfers_stay_pending_without_a_simulator(kit: LedgerKit) -> None:
    kit.mode = "production"
    a = await kit.funded_wallet("0")
    # Production money arrives from real rails (no sandbox deposits): seed one deposit entry.
    await seed_production_deposit(kit.db, kit.tenant_id, a["wallet_id"], "5")
    r = await kit.send(kit.payout_cmd(a["wallet_id"], "2.52"))
    assert r.data["state"] == "pending"
    await kit.db.execute("SELECT pg_sleep(2.5)")
    assert await kit.state(r.data["transfer_id"]) == "pending"
    assert await kit.balances(a["wallet_id"]) == (D("2.48"), D("2.52"))

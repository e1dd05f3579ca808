"""Ledger resources end to end through the message path (the in-process tier's bus):
customers, wallets, virtual accounts, and the GetResource / ListResources reads, each scoped
by tenant and mode."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import pytest

from common.addresses import b58check_valid, b58decode
from ledger.numbers import OFFERED_PAIRS, aba_valid, bank_details, iban, iban_valid
from tests.conftest import Stack
from tests.support.ledger import LedgerKit, open_kit

pytestmark = [pytest.mark.inprocess, pytest.mark.timeout(900)]  # the first test may start the stack

EVM = re.compile(r"^0x[0-9a-f]{40}$")
B58 = re.compile(r"^[1-9A-HJ-NP-Za-km-z]+$")


@pytest.fixture
async def kit(stack: Stack) -> AsyncIterator[LedgerKit]:
    async with open_kit(stack) as k:
        yield k


@pytest.mark.unit
def test_checksums_match_published_vectors() -> None:
    assert iban("GB", "WEST12345698765432") == "GB82WEST12345698765432"
    assert iban("DE", "370400440532013000") == "DE89370400440532013000"
    assert iban_valid("GB82 WEST 1234 5698 7654 32") and not iban_valid("GB83WEST12345698765432")
    assert aba_valid("011000015") and aba_valid("021000021") and not aba_valid("021000022")
    # A published TRON address (base58check, version byte 0x41).
    assert b58check_valid("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t")
    assert b58decode("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t")[0] == 0x41
    for currency in ("USD", "EUR", "GBP"):
        d = bank_details(currency)
        if d["routing_number"] and currency == "USD":
            assert aba_valid(d["routing_number"])
        if d["iban"]:
            assert iban_valid(d["iban"])
    gbp = bank_details("GBP")
    assert re.fullmatch(r"\d{8}", gbp["account_number"]) and re.fullmatch(r"\d{6}", gbp["routing_number"])
    assert gbp["iban"].startswith("GB") and gbp["bic"]


async def test_wallet_for_every_offered_pair_has_a_chain_shaped_address(kit: LedgerKit) -> None:
    cus = await kit.customer()
    for symbol, chains in OFFERED_PAIRS.items():
        for chain in sorted(chains):
            w = await kit.wallet(cus, symbol.lower(), chain.lower())
            assert (w["symbol"], w["chain"]) == (symbol, chain)
            addr = w["deposit_address"]
            if chain == "SOL":
                assert B58.match(addr) and 32 <= len(b58decode(addr)) <= 32, addr
            elif chain == "TRON":
                assert addr.startswith("T") and len(addr) == 34 and b58check_valid(addr), addr
            else:
                assert EVM.match(addr), addr
            r = await kit.get("wallets", w["wallet_id"])
            assert r.data["available_balance"] == "0.00" and r.data["held_balance"] == "0.00"
            assert r.data["customer_id"] == cus


@pytest.mark.parametrize(
    ("symbol", "chain", "field"),
    [
        ("USDC", "TRON", "chain"),
        ("USDT", "BASE", "chain"),
        ("EURC", "TRON", "chain"),
        ("PYUSD", "BSC", "chain"),
        ("DAI", "ETH", "symbol"),
        ("USDC", "BITCOIN", "chain"),
    ],
)
async def test_pairs_not_offered_are_refused(kit: LedgerKit, symbol: str, chain: str, field: str) -> None:
    cus = await kit.customer()
    r = await kit.send(kit.wallet_cmd(cus, symbol, chain))
    assert r.status == 400 and r.error.code == "invalid_request" and r.error.details["field"] == field
    assert await kit.db.fetchval("SELECT count(*) FROM ledger.wallets WHERE customer_id = $1", cus) == 0


async def test_wallet_for_unknown_or_foreign_customer_is_not_found(kit: LedgerKit) -> None:
    cus = await kit.customer()
    foreign = kit.wallet_cmd(cus)
    foreign = type(foreign)(
        **{
            **{f: getattr(foreign, f) for f in foreign.__struct_fields__},
            "ctx": kit.ctx(tenant_id="someone-else"),
        }
    )
    r = await kit.send(kit.wallet_cmd("cus_missing"))
    assert r.status == 404 and r.error.code == "not_found" and r.error.details["field"] == "customer_id"
    r = await kit.send(foreign)
    assert r.status == 404 and r.error.code == "not_found"


async def test_virtual_account_numbers_per_currency_and_both_destination_key_sets(kit: LedgerKit) -> None:
    cus = await kit.customer()
    usdc = await kit.wallet(cus, "USDC", "SOL")
    eurc = await kit.wallet(cus, "EURC", "BASE")
    # {rail, currency, address}
    usd = await kit.ok(
        kit.va_cmd(cus, "usd", rail="stablecoin", currency="usdc", address=usdc["deposit_address"])
    )
    assert usd["currency"] == "USD" and aba_valid(usd["routing_number"])
    assert re.fullmatch(r"\d{12}", usd["account_number"]) and usd["iban"] is None and usd["bic"] is None
    # {payment_rail, currency, provider_wallet_id}, normalised by the gateway to VADestination
    eur = await kit.ok(
        kit.va_cmd(cus, "EUR", rail="provider_wallet", currency="EURC", provider_wallet_id=eurc["wallet_id"])
    )
    assert eur["currency"] == "EUR" and iban_valid(eur["iban"]) and eur["bic"]
    assert eur["account_number"] is None and eur["routing_number"] is None
    r = await kit.get("virtual-accounts", usd["virtual_account_id"])
    assert r.data["destination"]["provider_wallet_id"] == usdc["wallet_id"]
    assert r.data["destination"]["address"] == usdc["deposit_address"]
    assert r.data["iban"] is None and r.data["customer_id"] == cus


async def test_virtual_account_destination_rules(kit: LedgerKit) -> None:
    cus, other = await kit.customer(), await kit.customer()
    usdc = await kit.wallet(cus, "USDC", "ETH")
    eurc = await kit.wallet(cus, "EURC", "ETH")
    theirs = await kit.wallet(other, "USDC", "ETH")

    def coin(symbol: str, address: str, rail: str = "stablecoin") -> dict[str, str]:
        return {"rail": rail, "currency": symbol, "address": address}

    to_usdc = usdc["deposit_address"]
    cases = [
        # (currency, destination, status, field)
        (
            "USD",
            {"rail": "provider_wallet", "currency": "USDC", "provider_wallet_id": theirs["wallet_id"]},
            404,
            "destination.provider_wallet_id",
        ),
        ("USD", coin("USDC", "0x" + "0" * 40), 404, "destination.address"),
        ("USD", coin("USDT", to_usdc), 400, "destination.currency"),
        ("EUR", coin("USDC", to_usdc), 400, "currency"),
        ("USD", coin("EURC", eurc["deposit_address"]), 400, "currency"),
        ("GBP", coin("USDC", to_usdc), 400, "currency"),
        ("JPY", coin("USDC", to_usdc), 400, "currency"),
        ("USD", coin("USDC", to_usdc, rail="ach"), 400, "destination.rail"),
        ("USD", {"rail": "stablecoin", "currency": "USDC"}, 400, "destination.address"),
    ]
    for currency, dest, status, field in cases:
        r = await kit.send(kit.va_cmd(cus, currency, **dest))
        assert (r.status, r.error and r.error.details.get("field")) == (status, field), (currency, dest, r)
    r = await kit.send(
        kit.va_cmd("cus_nope", "USD", rail="stablecoin", currency="USDC", address=usdc["deposit_address"])
    )
    assert r.status == 404 and r.error.details["field"] == "customer_id"
    assert (
        await kit.db.fetchval("SELECT count(*) FROM ledger.virtual_accounts WHERE customer_id = $1", cus) == 0
    )


async def test_reads_are_scoped_by_tenant_and_mode(kit: LedgerKit) -> None:
    w = await kit.funded_wallet("10.00")
    ids = {
        "customers": w["customer_id"],
        "wallets": w["wallet_id"],
        "virtual-accounts": w["virtual_account_id"],
    }
    for resource, rid in ids.items():
        assert (await kit.get(resource, rid)).status == 200
        for ctx in ({"tenant_id": "another-tenant"}, {"mode": "production"}):
            r = await kit.get(resource, rid, **ctx)
            assert r.status == 404 and r.error.code == "not_found", (resource, ctx)
    c = (await kit.get("customers", w["customer_id"])).data
    assert c["customer_id"] == w["customer_id"] and c["provider"] == "service" and c["created_at"]
    wallet = (await kit.get("wallets", w["wallet_id"])).data
    assert wallet["available_balance"] == "10.00" and wallet["held_balance"] == "0.00"
    r = await kit.get("unicorns", "x")
    assert r.status == 400 and r.error.details["field"] == "resource"


async def test_lists_are_newest_first_with_cursor_pages(kit: LedgerKit) -> None:
    made = [await kit.customer(service_user_id=f"u-{i}") for i in range(5)]
    page = await kit.list("customers", limit=2)
    assert [c["customer_id"] for c in page.data["items"]] == made[::-1][:2]
    seen = [c["customer_id"] for c in page.data["items"]]
    while page.data["next_cursor"]:
        page = await kit.list("customers", limit=2, starting_after=page.data["next_cursor"])
        seen += [c["customer_id"] for c in page.data["items"]]
    assert seen == made[::-1]
    assert page.data["next_cursor"] is None
    assert (await kit.list("customers", limit=100)).data["next_cursor"] is None
    for bad in (0, 101):
        r = await kit.list("customers", limit=bad)
        assert r.status == 400 and r.error.details["field"] == "limit"
    other = await kit.list("wallets")
    assert other.data == {"items": [], "next_cursor": None}

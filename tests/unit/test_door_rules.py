"""The gateway's cross-field rules (docs/reference/index.md), every refusal by its field AND its
words: a partner reads the message, so it is part of the contract, and ``make mutate``
showed that tests naming only the field let a wrong message or a wrong branch pass.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from common.errors import ServiceError
from gateway import rules
from gateway.schemas import PartyIn, VADestinationIn

pytestmark = pytest.mark.unit

EVM = "0x" + "ab" * 20
SOL = "4Nd1mBQtrMJVYVfKf2PJy9NZUZdTAsp7D4xWLs4gDB4T"
TRON = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"


def party(**kw: Any) -> PartyIn:
    return msgspec.convert(kw, PartyIn)


def refused(fn: Any, *args: Any) -> tuple[str, str]:
    with pytest.raises(ServiceError) as info:
        fn(*args)
    assert info.value.code == "invalid_request"
    return info.value.details["field"], info.value.message


WALLET = {"payment_rail": "provider_wallet", "currency": "USDC", "amount": "5", "provider_wallet_id": "wal_1"}
ONCHAIN = {"payment_rail": "stablecoin", "currency": "USDC", "chain": "BASE", "address": EVM}
BANK = {"payment_rail": "ach", "currency": "USD", "external_account_id": "ext_1"}


@pytest.mark.parametrize(
    ("kind", "src", "dst", "field", "message"),
    [
        ("transfer", {**WALLET, "amount": None}, WALLET, "source.amount", "source.amount is required"),
        (
            "transfer",
            {**WALLET, "payment_rail": "ach", "currency": "USD"},
            WALLET,
            "source.payment_rail",
            "transfers move between wallets: provider_wallet or stablecoin",
        ),
        (
            "transfer",
            WALLET,
            BANK,
            "destination.payment_rail",
            "transfers move between wallets: provider_wallet or stablecoin",
        ),
        (
            "transfer",
            {**WALLET, "currency": "EURC"},
            WALLET,
            "source.currency",
            "transfers move USDC or USDT",
        ),
        (
            "transfer",
            WALLET,
            {**WALLET, "currency": "pyusd"},
            "destination.currency",
            "transfers move USDC or USDT",
        ),
        (
            "transfer",
            WALLET,
            {**WALLET, "currency": "USDT"},
            "destination.currency",
            "source and destination currency must match",
        ),
        (
            "transfer",
            {**WALLET, "payment_rail": "stablecoin", "chain": "BASE", "provider_wallet_id": None},
            WALLET,
            "source.customer_id",
            "an on-chain source names customer_id",
        ),
        (  # a wallet id alone does not do (the ledger finds an on-chain source by its customer)
            "transfer",
            {**WALLET, "payment_rail": "stablecoin", "chain": "BASE"},
            WALLET,
            "source.customer_id",
            "an on-chain source names customer_id",
        ),
        (
            "transfer",
            WALLET,
            {**ONCHAIN, "address": None},
            "destination.address",
            "an on-chain destination names address",
        ),
        (
            "transfer",
            WALLET,
            {**ONCHAIN, "address": "0x" + "ab" * 19},
            "destination.address",
            "an EVM address is 0x followed by 40 hexadecimal digits",
        ),
        (
            "transfer",
            WALLET,
            {**ONCHAIN, "chain": "SOL", "address": EVM},
            "destination.address",
            "a Solana address is the base58 encoding of 32 bytes",
        ),
        (
            "transfer",
            WALLET,
            {**ONCHAIN, "chain": None},
            "destination.chain",
            "stablecoin needs chain",
        ),
        ("payout", {**WALLET, "amount": None}, BANK, "source.amount", "source.amount is required"),
        (
            "payout",
            {**ONCHAIN, "amount": "5", "customer_id": "cus_1"},
            BANK,
            "source.payment_rail",
            "a payout's source is a provider_wallet",
        ),
        (
            "payout",
            WALLET,
            WALLET,
            "destination.payment_rail",
            "payouts pay by ach, wire, sepa, faster_payments",
        ),
        (
            "payout",
            WALLET,
            {**BANK, "external_account_id": None},
            "destination.external_account_id",
            "payouts pay an approved external account",
        ),
        ("payout", WALLET, {**BANK, "currency": "EUR"}, "destination.currency", "ach pays USD, not EUR"),
        ("payout", WALLET, {**BANK, "chain": "ETH"}, "destination.chain", "ach has no chain"),
        (
            "payout",
            {**WALLET, "currency": "usd"},
            BANK,
            "source.currency",
            "provider_wallet moves stablecoins, not USD",
        ),
        (
            "payout",
            {**WALLET, "provider_wallet_id": None},
            BANK,
            "source.provider_wallet_id",
            "provider_wallet needs provider_wallet_id",
        ),
        (
            "transfer",
            {**ONCHAIN, "amount": "5", "customer_id": "cus_1", "chain": None, "address": None},
            WALLET,
            "source.chain",
            "stablecoin needs chain",
        ),
        (
            "transfer",
            {**ONCHAIN, "amount": "5", "customer_id": "cus_1", "chain": "TRON"},
            WALLET,
            "source.chain",
            "USDC is not offered on TRON",
        ),
        (
            "payout",
            WALLET,
            {**BANK, "bank_account": {"routing_number": "021000022", "account_number": "12345678"}},
            "destination.bank_account.routing_number",
            "ach needs a 9-digit ABA routing number with a valid checksum",
        ),
        (
            "payout",
            WALLET,
            {
                **BANK,
                "payment_rail": "sepa",
                "currency": "EUR",
                "bank_account": {"iban": "DE89370400440532013001"},
            },
            "destination.bank_account.iban",
            "iban check digits do not match (ISO 13616 mod 97)",
        ),
    ],
)
def test_transfer_and_payout_refusals(
    kind: str, src: dict[str, Any], dst: dict[str, Any], field: str, message: str
) -> None:
    clean = {k: v for k, v in src.items() if v is not None}
    dest = {k: v for k, v in dst.items() if v is not None}
    assert refused(rules.transfer_parties, kind, party(**clean), party(**dest)) == (field, message)


def test_accepted_parties_carry_every_field_normalised() -> None:
    src, dst = rules.transfer_parties(
        "transfer",
        party(
            payment_rail="stablecoin",
            currency="usdt",
            chain="tron",
            amount="7.25",
            customer_id="cus_1",
            from_address=TRON,
            deposit_id="dep_1",
        ),
        party(payment_rail="stablecoin", currency="USDT", chain="TRON", address=TRON),
    )
    assert msgspec.to_builtins(src) == {
        "payment_rail": "stablecoin",
        "currency": "USDT",
        "chain": "TRON",
        "amount": "7.25",
        "customer_id": "cus_1",
        "from_address": TRON,
        "deposit_id": "dep_1",
    }
    assert msgspec.to_builtins(dst) == {
        "payment_rail": "stablecoin",
        "currency": "USDT",
        "chain": "TRON",
        "address": TRON,
    }
    src, dst = rules.transfer_parties(
        "transfer",
        party(**WALLET),
        party(payment_rail="stablecoin", currency="usdc", chain="sol", address=SOL),
    )
    assert (src.provider_wallet_id, src.chain, dst.chain, dst.address) == ("wal_1", None, "SOL", SOL)
    src, dst = rules.transfer_parties(
        "payout",
        party(**WALLET),
        party(
            payment_rail="wire",
            currency="usd",
            external_account_id="ext_1",
            bank_account={
                "account_number": "12345678",
                "routing_number": "021000021",
                "iban": "DE89370400440532013000",
                "bic": "COBADEFFXXX",
            },
        ),
    )
    assert msgspec.to_builtins(dst) == {
        "payment_rail": "wire",
        "currency": "USD",
        "external_account_id": "ext_1",
        "bank_account": {
            "account_number": "12345678",
            "routing_number": "021000021",
            "iban": "DE89370400440532013000",
            "bic": "COBADEFFXXX",
        },
    }
    # a sort code on faster_payments is not an ABA number: no checksum applies
    rules.check_bank_numbers("b", "faster_payments", "123456", None)
    rules.check_bank_numbers("b", "sepa", "021000022", None)
    assert refused(rules.check_bank_numbers, "b", "wire", "021000022", None) == (
        "b.routing_number",
        "wire needs a 9-digit ABA routing number with a valid checksum",
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("abc", "amount must be a decimal string"),
        ("0", "amount must be greater than 0"),
        ("-0.5", "amount must be greater than 0"),
        ("Infinity", "amount must be greater than 0"),
        ("1000000000000.000001", "amount must be at most 1000000000000"),
        ("1.001", "USD amounts have at most 2 decimal places"),
    ],
)
def test_amount_refusals_say_why(value: str, message: str) -> None:
    assert refused(rules.check_amount, "x.amount", value, "usd") == ("x.amount", message)


def test_amount_edges_accepted() -> None:
    assert rules.check_amount("a", "1000000000000", "USDC") == "1000000000000"
    assert rules.check_amount("a", "0.01", "USD") == "0.01"
    assert rules.check_amount("a", "1E+2", "USD") == "1E+2"  # a positive exponent has no decimals
    assert rules.decimals_for("gbp") == 2 and rules.decimals_for("USDC") == 6
    assert refused(rules.check_pair, "chain", "PYUSD", "BASE") == ("chain", "PYUSD is not offered on BASE")


def va(**kw: Any) -> VADestinationIn:
    return msgspec.convert(kw, VADestinationIn)


@pytest.mark.parametrize(
    ("dest", "fiat", "field", "message"),
    [
        (
            {"rail": "stablecoin", "payment_rail": "provider_wallet", "currency": "USDC", "address": EVM},
            "USD",
            "destination.payment_rail",
            "rail and payment_rail disagree",
        ),
        (
            {"currency": "USDC", "address": EVM},
            "USD",
            "destination.rail",
            "destination.rail (or payment_rail) is required",
        ),
        (
            {"rail": "stablecoin", "currency": "USDC", "provider_wallet_id": "wal_1"},
            "USD",
            "destination.address",
            "destination.address is required",
        ),
        (
            {"payment_rail": "stablecoin", "currency": "USDC"},
            "USD",
            "destination.provider_wallet_id",
            "destination needs provider_wallet_id or address",
        ),
        (
            {"rail": "stablecoin", "currency": "EURC", "address": EVM},
            "USD",
            "destination.currency",
            "USD deposits cannot be routed to EURC; pegged: PYUSD, USDB, USDC, USDT",
        ),
        (
            {"rail": "stablecoin", "currency": "usdc", "address": EVM},
            "GBP",
            "destination.currency",
            "GBP deposits cannot be routed to USDC; pegged: none",
        ),
    ],
)
def test_virtual_account_destination_refusals(
    dest: dict[str, Any], fiat: str, field: str, message: str
) -> None:
    assert refused(rules.va_destination, va(**dest), fiat) == (field, message)


def test_virtual_account_destination_accepted() -> None:
    d = rules.va_destination(
        va(rail="stablecoin", payment_rail="stablecoin", currency="usdc", address=EVM), "USD"
    )
    assert msgspec.to_builtins(d) == {"rail": "stablecoin", "currency": "USDC", "address": EVM}
    d = rules.va_destination(
        va(payment_rail="provider_wallet", currency="eurc", provider_wallet_id="wal_1"), "EUR"
    )
    assert msgspec.to_builtins(d) == {
        "rail": "provider_wallet",
        "currency": "EURC",
        "provider_wallet_id": "wal_1",
    }

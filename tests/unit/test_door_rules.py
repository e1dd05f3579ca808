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
    # a partner reads the message alone: it names the field it is about
    assert info.value.message.startswith(info.value.details["field"]), info.value.message
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
            "source.payment_rail must be provider_wallet or stablecoin for a transfer",
        ),
        (
            "transfer",
            WALLET,
            BANK,
            "destination.payment_rail",
            "destination.payment_rail must be provider_wallet or stablecoin for a transfer",
        ),
        (
            "transfer",
            {**WALLET, "currency": "EURC"},
            WALLET,
            "source.currency",
            "source.currency must be USDC or USDT for a transfer",
        ),
        (
            "transfer",
            WALLET,
            {**WALLET, "currency": "pyusd"},
            "destination.currency",
            "destination.currency must be USDC or USDT for a transfer",
        ),
        (
            "transfer",
            WALLET,
            {**WALLET, "currency": "USDT"},
            "destination.currency",
            "destination.currency must match source.currency",
        ),
        (
            "transfer",
            {**WALLET, "payment_rail": "stablecoin", "chain": "BASE", "provider_wallet_id": None},
            WALLET,
            "source.customer_id",
            "source.customer_id is required for an on-chain source",
        ),
        (  # a wallet id alone does not do (the ledger finds an on-chain source by its customer)
            "transfer",
            {**WALLET, "payment_rail": "stablecoin", "chain": "BASE"},
            WALLET,
            "source.customer_id",
            "source.customer_id is required for an on-chain source",
        ),
        (
            "transfer",
            WALLET,
            {**ONCHAIN, "address": None},
            "destination.address",
            "destination.address is required for an on-chain destination",
        ),
        (
            "transfer",
            WALLET,
            {**ONCHAIN, "address": "0x" + "ab" * 19},
            "destination.address",
            "destination.address must be an address of BASE:"
            " an EVM address is 0x followed by 40 hexadecimal digits",
        ),
        (
            "transfer",
            WALLET,
            {**ONCHAIN, "chain": "SOL", "address": EVM},
            "destination.address",
            "destination.address must be an address of SOL:"
            " a Solana address is the base58 encoding of 32 bytes",
        ),
        (
            "transfer",
            WALLET,
            {**ONCHAIN, "chain": None},
            "destination.chain",
            "destination.chain is required on stablecoin",
        ),
        ("payout", {**WALLET, "amount": None}, BANK, "source.amount", "source.amount is required"),
        (
            "payout",
            {**ONCHAIN, "amount": "5", "customer_id": "cus_1"},
            BANK,
            "source.payment_rail",
            "source.payment_rail must be provider_wallet for a payout",
        ),
        (
            "payout",
            WALLET,
            WALLET,
            "destination.payment_rail",
            "destination.payment_rail must be one of ach, wire, sepa, faster_payments for a payout",
        ),
        (
            "payout",
            WALLET,
            {**BANK, "external_account_id": None},
            "destination.external_account_id",
            "destination.external_account_id is required: payouts pay an approved external account",
        ),
        (
            "payout",
            WALLET,
            {**BANK, "currency": "EUR"},
            "destination.currency",
            "destination.currency must be USD on ach, not EUR",
        ),
        (
            "payout",
            WALLET,
            {**BANK, "chain": "ETH"},
            "destination.chain",
            "destination.chain must be left out on ach: it has no chain",
        ),
        (
            "payout",
            {**WALLET, "currency": "usd"},
            BANK,
            "source.currency",
            "source.currency must be a stablecoin on provider_wallet, not USD",
        ),
        (
            "payout",
            {**WALLET, "provider_wallet_id": None},
            BANK,
            "source.provider_wallet_id",
            "source.provider_wallet_id is required on provider_wallet",
        ),
        (
            "transfer",
            {**ONCHAIN, "amount": "5", "customer_id": "cus_1", "chain": None, "address": None},
            WALLET,
            "source.chain",
            "source.chain is required on stablecoin",
        ),
        (
            "transfer",
            {**ONCHAIN, "amount": "5", "customer_id": "cus_1", "chain": "TRON"},
            WALLET,
            "source.chain",
            "source.chain must be a chain that offers USDC; USDC is not offered on TRON",
        ),
        (
            "payout",
            WALLET,
            {**BANK, "bank_account": {"routing_number": "021000022", "account_number": "12345678"}},
            "destination.bank_account.routing_number",
            "destination.bank_account.routing_number must be a 9-digit ABA routing number"
            " with a valid checksum on ach",
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
            "destination.bank_account.iban must have valid check digits (ISO 13616 mod 97)",
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
        "b.routing_number must be a 9-digit ABA routing number with a valid checksum on wire",
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("abc", 'x.amount must be a decimal string, like "10.50"'),
        ("0", "x.amount must be greater than 0"),
        ("-0.5", "x.amount must be greater than 0"),
        ("Infinity", "x.amount must be greater than 0"),
        ("1000000000000.000001", "x.amount must be at most 1000000000000"),
        ("1.001", 'x.amount must be a decimal string with at most 2 decimal places for USD, like "10.50"'),
    ],
)
def test_amount_refusals_say_why(value: str, message: str) -> None:
    assert refused(rules.check_amount, "x.amount", value, "usd") == ("x.amount", message)


def test_a_stablecoin_amount_refusal_shows_six_places() -> None:
    """The example in the message has the currency's own places, padded with zeros."""
    assert refused(rules.check_amount, "x.amount", "1.0000001", "usdc") == (
        "x.amount",
        'x.amount must be a decimal string with at most 6 decimal places for USDC, like "10.500000"',
    )


def test_amount_edges_accepted() -> None:
    assert rules.check_amount("a", "1000000000000", "USDC") == "1000000000000"
    assert rules.check_amount("a", "0.01", "USD") == "0.01"
    assert rules.check_amount("a", "1E+2", "USD") == "1E+2"  # a positive exponent has no decimals
    assert rules.decimals_for("gbp") == 2 and rules.decimals_for("USDC") == 6
    assert refused(rules.check_pair, "chain", "PYUSD", "BASE") == (
        "chain",
        "chain must be a chain that offers PYUSD; PYUSD is not offered on BASE",
    )


def va(**kw: Any) -> VADestinationIn:
    return msgspec.convert(kw, VADestinationIn)


@pytest.mark.parametrize(
    ("dest", "fiat", "field", "message"),
    [
        (
            {"rail": "stablecoin", "payment_rail": "provider_wallet", "currency": "USDC", "address": EVM},
            "USD",
            "destination.payment_rail",
            "destination.payment_rail must equal destination.rail when both are given",
        ),
        (
            {"currency": "USDC", "address": EVM},
            "USD",
            "destination.rail",
            "destination.rail (or destination.payment_rail) is required",
        ),
        (
            {"rail": "stablecoin", "currency": "USDC", "provider_wallet_id": "wal_1"},
            "USD",
            "destination.address",
            "destination.address is required when destination.rail is given",
        ),
        (
            {"payment_rail": "stablecoin", "currency": "USDC"},
            "USD",
            "destination.provider_wallet_id",
            "destination.provider_wallet_id (or destination.address) is required",
        ),
        (
            {"rail": "stablecoin", "currency": "EURC", "address": EVM},
            "USD",
            "destination.currency",
            "destination.currency must be pegged to USD, not EURC; pegged: PYUSD, USDB, USDC, USDT",
        ),
        (
            {"rail": "stablecoin", "currency": "usdc", "address": EVM},
            "GBP",
            "destination.currency",
            "destination.currency must be pegged to GBP, not USDC; pegged: none",
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

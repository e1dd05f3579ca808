"""Chain-shaped deposit addresses and bank numbers with valid checksums.

The pairs, pegs and bank checksums live in ``common`` (shared with the gateway); the
address encodings live in ``common.addresses`` (the gateway checks withdrawals with them).
Hand-written on purpose: each is a few lines of well-known arithmetic (base58 / base58check,
ABA 3-7-1 weights, ISO 13616 mod-97), while the libraries that do it
(``base58``, ``python-stdnum``, ``schwifty``) are not kept dependencies of the project and
would each add a package to every deployment for one function. Tests check them against
published vectors.
"""

from __future__ import annotations

import secrets
from typing import TypedDict

from common.addresses import EVM_CHAINS, b58check_encode, b58encode
from common.checksums import aba_check_digit, aba_valid, iban, iban_valid
from common.offerings import OFFERED_PAIRS, PEGS


def deposit_address(chain: str) -> str:
    """A fresh address shaped like the chain's own."""
    if chain in EVM_CHAINS:
        return "0x" + secrets.token_hex(20)
    if chain == "SOL":
        return b58encode(secrets.token_bytes(32))
    if chain == "TRON":
        return b58check_encode(b"\x41" + secrets.token_bytes(20))  # always starts with T
    raise ValueError(f"unknown chain {chain}")


def _digits(n: int) -> str:
    return "".join(secrets.choice("0123456789") for _ in range(n))


def routing_number() -> str:
    first8 = "0" + secrets.choice("12345678") + _digits(6)  # Federal Reserve district 01-08
    return first8 + aba_check_digit(first8)


class BankDetails(TypedDict):
    """A virtual account's bank numbers: columns of ``ledger.virtual_accounts``."""

    account_number: str | None
    routing_number: str | None
    iban: str | None
    bic: str | None
    bank_name: str


def bank_details(currency: str) -> BankDetails:
    """Numbers a virtual account answers with (docs/reference/index.md, "Conventions every
    resource follows")."""
    if currency == "USD":
        return {
            "account_number": "9" + _digits(11),
            "routing_number": routing_number(),
            "iban": None,
            "bic": None,
            "bank_name": "Sluice Partner Bank",
        }
    if currency == "EUR":
        return {
            "account_number": None,
            "routing_number": None,
            "iban": iban("DE", "37040044" + _digits(10)),
            "bic": "SLUIDEFFXXX",
            "bank_name": "Sluice Partner Bank Europe",
        }
    if currency == "GBP":
        account, sort_code = _digits(8), "04" + _digits(4)
        return {
            "account_number": account,
            "routing_number": sort_code,
            "iban": iban("GB", "SLUI" + sort_code + account),
            "bic": "SLUIGB2L",
            "bank_name": "Sluice Partner Bank UK",
        }
    raise ValueError(f"unsupported currency {currency}")


__all__ = ["OFFERED_PAIRS", "PEGS", "aba_check_digit", "aba_valid", "iban", "iban_valid"]

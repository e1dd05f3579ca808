"""Chain-shaped deposit addresses and bank numbers with valid checksums.

Hand-written on purpose: each is a few lines of well-known arithmetic (base58 /
base58check, ABA 3-7-1 weights, ISO 13616 mod-97), while the libraries that do it
(``base58``, ``python-stdnum``, ``schwifty``) are not kept dependencies of the project and
would each add a package to every deployment for one function. Tests check them against
published vectors.
"""

from __future__ import annotations

import hashlib
import secrets

EVM_CHAINS = frozenset({"ETH", "BSC", "POLYGON", "BASE", "OPTIMISM", "ARBITRUM"})

# Contract section 5: the (symbol, chain) pairs offered.
OFFERED_PAIRS: dict[str, frozenset[str]] = {
    "USDC": frozenset({"ETH", "SOL", "BASE", "POLYGON", "OPTIMISM", "ARBITRUM"}),
    "USDT": frozenset({"ETH", "TRON", "SOL", "BSC", "POLYGON", "ARBITRUM"}),
    "PYUSD": frozenset({"ETH", "SOL", "ARBITRUM"}),
    "USDB": frozenset({"ETH", "SOL", "BASE"}),
    "EURC": frozenset({"ETH", "SOL", "BASE"}),
}

# Fiat currency -> the stablecoins pegged 1:1 to it.
PEGS: dict[str, frozenset[str]] = {
    "USD": frozenset({"USDC", "USDT", "PYUSD", "USDB"}),
    "EUR": frozenset({"EURC"}),
    "GBP": frozenset(),
}

B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def b58encode(raw: bytes) -> str:
    n = int.from_bytes(raw, "big")
    out = ""
    while n:
        n, r = divmod(n, 58)
        out = B58[r] + out
    pad = len(raw) - len(raw.lstrip(b"\0"))
    return "1" * pad + out


def b58decode(text: str) -> bytes:
    n = 0
    for ch in text:
        n = n * 58 + B58.index(ch)
    body = n.to_bytes((n.bit_length() + 7) // 8, "big") if n else b""
    pad = len(text) - len(text.lstrip("1"))
    return b"\0" * pad + body


def _checksum(payload: bytes) -> bytes:
    return hashlib.sha256(hashlib.sha256(payload).digest()).digest()[:4]


def b58check_encode(payload: bytes) -> str:
    return b58encode(payload + _checksum(payload))


def b58check_valid(text: str) -> bool:
    raw = b58decode(text)
    return len(raw) > 4 and _checksum(raw[:-4]) == raw[-4:]


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


def aba_check_digit(first8: str) -> str:
    weights = (3, 7, 1, 3, 7, 1, 3, 7)
    total = sum(int(d) * w for d, w in zip(first8, weights, strict=True))
    return str((10 - total % 10) % 10)


def aba_valid(routing: str) -> bool:
    return len(routing) == 9 and routing.isdigit() and aba_check_digit(routing[:8]) == routing[8]


def routing_number() -> str:
    first8 = "0" + secrets.choice("12345678") + _digits(6)  # Federal Reserve district 01-08
    return first8 + aba_check_digit(first8)


def _iban_number(text: str) -> int:
    return int("".join(str(int(c, 36)) for c in text))


def iban(country: str, bban: str) -> str:
    check = 98 - _iban_number(bban + country + "00") % 97
    return f"{country}{check:02d}{bban}"


def iban_valid(value: str) -> bool:
    v = value.replace(" ", "").upper()
    return len(v) >= 15 and v[:2].isalpha() and _iban_number(v[4:] + v[:4]) % 97 == 1


def bank_details(currency: str) -> dict[str, str | None]:
    """Numbers a virtual account answers with (contract section 5)."""
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

"""Withdrawal addresses (docs/guides/money.md, "Withdrawing to an external address"): EIP-55,
base58 (SOL) and base58check (TRON)."""

from __future__ import annotations

import secrets

import pytest

from common.addresses import b58check_encode, b58encode, chains_of, eip55, normalized, problem

pytestmark = pytest.mark.unit

# The test vectors of EIP-55 itself.
EIP55_VECTORS = [
    "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
    "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
    "0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB",
    "0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb",
]


@pytest.mark.parametrize("address", EIP55_VECTORS)
def test_eip55_vectors(address: str) -> None:
    assert eip55(address.lower()) == address
    assert problem("ETH", address) is None
    assert problem("BASE", address.lower()) is None and problem("BASE", "0x" + address[2:].upper()) is None
    broken = address[:-1] + (address[-1].swapcase() if address[-1].isalpha() else "A")
    assert problem("ETH", broken) is not None  # one letter's case flipped: checksum fails


def test_evm_shapes() -> None:
    assert problem("ETH", "0x" + "ab" * 20) is None
    for bad in ("0x" + "ab" * 19, "ab" * 20, "0x" + "zz" * 20, "0x" + "ab" * 21):
        assert problem("ETH", bad) is not None, bad


def test_solana_is_base58_of_32_bytes() -> None:
    good = b58encode(secrets.token_bytes(32))
    assert problem("SOL", good) is None
    assert problem("SOL", b58encode(b"\x01" + secrets.token_bytes(30))) is not None  # 31 bytes
    assert problem("SOL", b58encode(b"\xff" * 33)) is not None
    assert problem("SOL", good.replace(good[3], "0")) is not None  # 0 is not base58


def test_tron_is_base58check_with_0x41() -> None:
    assert problem("TRON", "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t") is None  # USDT's contract on TRON
    made = b58check_encode(b"\x41" + secrets.token_bytes(20))
    assert made.startswith("T") and problem("TRON", made) is None
    tampered = made[:-1] + ("1" if made[-1] != "1" else "2")
    assert problem("TRON", tampered) is not None
    assert problem("TRON", b58check_encode(b"\x42" + secrets.token_bytes(20))) is not None


def test_families_and_normal_form() -> None:
    assert chains_of("0x" + "ab" * 20) == ["evm"]
    assert chains_of("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t") == ["tron"]
    assert chains_of("hello") == []
    assert normalized(EIP55_VECTORS[0]) == EIP55_VECTORS[0].lower()
    assert normalized("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t") == "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"

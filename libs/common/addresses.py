"""On-chain addresses (docs/guides/money.md, "Withdrawing to an external address"): the
encodings the suite makes deposit addresses in, and the checks a withdrawal's destination must
pass.

- EVM chains: ``0x`` + 40 hex; mixed case must carry a valid EIP-55 checksum (Keccak-256,
  from pycryptodome: hashlib's ``sha3_256`` is the NIST variant, a different hash);
- SOL: base58 of exactly 32 bytes;
- TRON: base58check (double SHA-256 checksum) of 21 bytes starting with 0x41, so ``T...``.

base58 is a few lines of well-known arithmetic, kept here rather than adding a package.
"""

from __future__ import annotations

import hashlib
import re

# pycryptodome (maintained) shares PyCrypto's import name, which bandit's B413 flags;
# the cryptography package has no Keccak-256.
from Crypto.Hash import keccak  # nosec B413

CHAINS = (
    "ETH",
    "SOL",
    "BSC",
    "POLYGON",
    "TRON",
    "BASE",
    "OPTIMISM",
    "ARBITRUM",
)  # every chain the suite knows
EVM_CHAINS = frozenset({"ETH", "BSC", "POLYGON", "BASE", "OPTIMISM", "ARBITRUM"})
B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_B58_RE = re.compile(f"^[{B58}]+$")
_EVM_RE = re.compile(r"^0x[0-9a-fA-F]{40}$")


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


def eip55(address: str) -> str:
    """The EIP-55 mixed-case form of an EVM address."""
    hexpart = address[2:].lower()
    digest = keccak.new(digest_bits=256, data=hexpart.encode()).hexdigest()
    return "0x" + "".join(
        c.upper() if int(d, 16) >= 8 else c for c, d in zip(hexpart, digest[:40], strict=True)
    )


def problem(chain: str, address: str) -> str | None:
    """Why ``address`` is not an address on ``chain`` (``None``: it is one)."""
    chain = chain.upper()
    if chain in EVM_CHAINS:
        if not _EVM_RE.match(address):
            return "an EVM address is 0x followed by 40 hexadecimal digits"
        body = address[2:]
        if body != body.lower() and body != body.upper() and eip55(address) != address:
            return "the mixed-case address fails its EIP-55 checksum"
        return None
    if chain == "SOL":
        if not _B58_RE.match(address) or len(b58decode(address)) != 32:
            return "a Solana address is the base58 encoding of 32 bytes"
        return None
    if chain == "TRON":
        if not (_B58_RE.match(address) and address.startswith("T") and b58check_valid(address)):
            return "a TRON address is base58check starting with T"
        raw = b58decode(address)
        if len(raw) != 25 or raw[0] != 0x41:
            return "a TRON address is base58check of 21 bytes starting with 0x41"
        return None
    return f"unknown chain {chain}"


def chains_of(address: str) -> list[str]:
    """The chain families whose format ``address`` has (none: it is no address)."""
    families = {"ETH": "evm", "SOL": "sol", "TRON": "tron"}
    return [family for chain, family in families.items() if problem(chain, address) is None]


def normalized(address: str) -> str:
    """The form screening compares: EVM addresses are case-insensitive, base58 ones are not."""
    return address.lower() if _EVM_RE.match(address) else address

"""Bank number checksums: ABA routing numbers (3-7-1 weights) and IBANs (ISO 13616 mod 97).

Hand-written on purpose: each is a few lines of well-known arithmetic, while the libraries
that do it (``python-stdnum``, ``schwifty``) would add a package to every deployment for one
function. The ledger generates numbers with them; the gateway and admin check the numbers a
partner or an operator supplies, so a typo is refused before anything is stored.
"""

from __future__ import annotations

ABA_WEIGHTS = (3, 7, 1, 3, 7, 1, 3, 7, 1)


def aba_check_digit(first8: str) -> str:
    """The ninth digit that makes ``first8`` a valid routing number."""
    total = sum(int(d) * w for d, w in zip(first8, ABA_WEIGHTS, strict=False))
    return str((10 - total % 10) % 10)


def aba_valid(routing: str) -> bool:
    """Nine digits whose 3-7-1 weighted sum is a multiple of ten."""
    if len(routing) != 9 or not routing.isascii() or not routing.isdigit():
        return False
    return sum(int(d) * w for d, w in zip(routing, ABA_WEIGHTS, strict=True)) % 10 == 0


def _iban_number(text: str) -> int:
    """Letters as 10..35, digits as themselves, read as one number."""
    return int("".join(str(int(ch, 36)) for ch in text))


def iban(country: str, bban: str) -> str:
    """The IBAN of ``bban`` in ``country`` with its check digits."""
    check = 98 - _iban_number(bban + country + "00") % 97
    return f"{country}{check:02d}{bban}"


def normalize_iban(value: str) -> str:
    return value.replace(" ", "").upper()


def iban_valid(value: str) -> bool:
    """15 to 34 letters and digits, a country, two check digits, mod 97 == 1 (spaces ignored)."""
    v = normalize_iban(value)
    if not 15 <= len(v) <= 34 or not v.isascii() or not v.isalnum():
        return False
    if not (v[:2].isalpha() and v[2:4].isdigit()):
        return False
    return _iban_number(v[4:] + v[:4]) % 97 == 1

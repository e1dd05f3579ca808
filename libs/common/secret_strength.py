"""One strength rule for every secret setting, and one way to read ``SLUICE_ADMIN_TOKEN``.

``SLUICE_ADMIN_TOKEN`` is ``name=token`` (or a bare token), comma-separated. :func:`split_operator`
is the one parser: admin authenticates with it (``admin.operators.tokens.parse_operators``) and the
settings check strength with it, so a base64 token ending in ``=`` (what ``openssl rand -base64
32`` prints) is a bare token to both, never an operator called by most of the token.

A secret (an operator token, ``SLUICE_JWT_SECRET``, ``SLUICE_ONBOARDING_SECRET``) is strong
when it has at least 32 characters and :func:`token_bits` of at least 160 (at least 32 random
bytes: docs/security.md, "Round 3"). The estimate is the length times the smaller of two
Shannon entropies: of its characters, and of the steps between neighbouring characters. The second
catches runs (``abcdefghijklmnopqrstuvwxyz0123456789``, every step +1) that have many distinct
characters; the first catches repeats and small alphabets. 32 random bytes in base64 or hex
score 180-280 (100,000 draws never scored below 180). It cannot prove randomness, only refuse
what is plainly not. Messages name the setting and the entry's place, never its value.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Sequence

MIN_SECRET_CHARS = 32
MIN_TOKEN_BITS = 160
OPERATOR_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$")
ADVICE = "at least 32 random bytes, e.g. `openssl rand -base64 32`"


ROLES = ("viewer", "operator", "approver")
_ROLE_SUFFIX = re.compile(r"^([A-Za-z][A-Za-z0-9_.-]{0,63}):(viewer|operator|approver)=")


def split_role(entry: str) -> tuple[str, str]:
    """``(entry without its role, role)`` of one ``SLUICE_ADMIN_TOKEN`` entry: ``name:role=token``;
    an entry without a role is an ``approver`` (what every token could do)."""
    m = _ROLE_SUFFIX.match(entry)
    if m is None:
        return entry, "approver"
    return f"{m.group(1)}={entry[m.end() :]}", m.group(2)


def split_operator(entry: str) -> tuple[str | None, str]:
    """``(name, token)`` of one ``SLUICE_ADMIN_TOKEN`` entry; ``name`` is None for a bare token.
    ``name=token`` needs a valid name and a token that is more than base64 padding; anything
    else is a bare token, ``=`` included (base64 ends in ``=``)."""
    name, sep, token = entry.partition("=")
    if sep and OPERATOR_NAME.match(name) and token.strip("="):
        return name, token
    return None, entry


def _entropy(symbols: Sequence[object]) -> float:
    counts = Counter(symbols)
    n = len(symbols)
    return -sum(c / n * math.log2(c / n) for c in counts.values()) if n else 0.0


def token_bits(token: str) -> float:
    """An estimate of a token's entropy in bits (see the module's docstring)."""
    if len(token) < 2:
        return 0.0
    steps = [ord(b) - ord(a) for a, b in itertools.pairwise(token)]
    return min(len(token) * _entropy(token), (len(token) - 1) * _entropy(steps))


def weakness(secret: str) -> str | None:
    """Why ``secret`` is too weak to use, or None; the reason never contains the secret."""
    if len(secret) < MIN_SECRET_CHARS:
        return f"shorter than {MIN_SECRET_CHARS} characters"
    if token_bits(secret) < MIN_TOKEN_BITS:
        return "too predictable (repeats, runs or words)"
    return None


def weak_admin_tokens(entries: Sequence[str]) -> list[str]:
    """One line per weak operator token: its place in the list and, when named, the operator."""
    out = []
    for n, entry in enumerate(entries, start=1):
        name, token = split_operator(split_role(entry)[0])
        reason = weakness(token)
        if reason is not None:
            who = f"entry {n}, operator {name!r}" if name else f"entry {n}, a bare token"
            out.append(f"SLUICE_ADMIN_TOKEN ({who}: {reason}; {ADVICE})")
    return out

"""Operator tokens: ``SLUICE_ADMIN_TOKEN`` is ``name=token`` (or a bare token), comma-separated.

A presented token is compared with every configured one, always all of them, through
``hmac.compare_digest`` on SHA-256 digests (equal lengths: nothing leaks through timing,
not even a token's length). The audit log names the operator, never the token.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

from common.authfail import FailureLimiter
from common.errors import ErrorCode, ServiceError
from common.secret_strength import split_operator


@dataclass(frozen=True, slots=True)
class Operator:
    name: str
    digest: bytes


def parse_operators(entries: list[str]) -> list[Operator]:
    """The operators of ``SLUICE_ADMIN_TOKEN``, read by ``common.secret_strength.split_operator``
    (the parser the start-up strength check uses too)."""
    out = []
    for entry in entries:
        name, secret = split_operator(entry)
        digest = hashlib.sha256(secret.encode()).digest()
        out.append(Operator(name or "operator-" + hashlib.sha256(digest).hexdigest()[:8], digest))
    return out


def authenticate(operators: list[Operator], authorization: str | None) -> str:
    """The acting operator's name; 401 for anything else (a partner API key included)."""
    scheme, _, token = (authorization or "").partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise ServiceError(ErrorCode.UNAUTHORIZED, "an operator bearer token is required")
    presented = hashlib.sha256(token.encode()).digest()
    actor = None
    for op in operators:
        if hmac.compare_digest(presented, op.digest) and actor is None:
            actor = op.name
    if actor is None:
        raise ServiceError(ErrorCode.UNAUTHORIZED, "invalid operator token")
    return actor


async def authenticate_limited(
    failures: FailureLimiter, address: str | None, operators: list[Operator], authorization: str | None
) -> str:
    """:func:`authenticate`, refused with 429 once ``address`` failed too often this minute
    (before any token is compared), and each failure counted against ``address``."""
    await failures.check(address)
    try:
        return authenticate(operators, authorization)
    except ServiceError:
        await failures.record(address)
        raise

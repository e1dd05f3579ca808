"""Operator tokens: ``SLUICE_ADMIN_TOKEN`` is ``name=token`` (or a bare token), comma-separated;
``name:role=token`` gives the operator a role (``viewer``, ``operator``, ``approver``:
admin.operators.four_eyes), and an entry without one is an approver.

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
from common.secret_strength import split_operator, split_role


@dataclass(frozen=True, slots=True)
class Operator:
    name: str
    digest: bytes
    role: str = "approver"


def parse_operators(entries: list[str]) -> list[Operator]:
    """The operators of ``SLUICE_ADMIN_TOKEN``, read by ``common.secret_strength.split_operator``
    (the parser the start-up strength check uses too)."""
    out = []
    for entry in entries:
        plain, role = split_role(entry)
        name, secret = split_operator(plain)
        digest = hashlib.sha256(secret.encode()).digest()
        out.append(Operator(name or "operator-" + hashlib.sha256(digest).hexdigest()[:8], digest, role))
    return out


def authenticate(operators: list[Operator], authorization: str | None) -> str:
    """The acting operator's name; 401 for anything else (a partner API key included)."""
    return authenticate_operator(operators, authorization).name


def authenticate_operator(operators: list[Operator], authorization: str | None) -> Operator:
    """The acting operator; 401 for anything else (a partner API key included)."""
    scheme, _, token = (authorization or "").partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise ServiceError(ErrorCode.UNAUTHORIZED, "an operator bearer token is required")
    presented = hashlib.sha256(token.encode()).digest()
    actor = None
    for op in operators:
        if hmac.compare_digest(presented, op.digest) and actor is None:
            actor = op
    if actor is None:
        raise ServiceError(ErrorCode.UNAUTHORIZED, "invalid operator token")
    return actor


async def authenticate_limited(
    failures: FailureLimiter, address: str | None, operators: list[Operator], authorization: str | None
) -> Operator:
    """:func:`authenticate`, refused with 429 once ``address`` failed too often this minute
    (before any token is compared), and each failure counted against ``address``."""
    await failures.check(address)
    try:
        return authenticate_operator(operators, authorization)
    except ServiceError:
        await failures.record(address)
        raise

"""API key format, hashing and the Redis cache names shared by the gateway and admin.

Keys are ``sk_test_`` / ``sk_live_`` + 32 random bytes (base64url). Only the SHA-256 of the
whole key is stored: a key has 256 bits of entropy, so a slow hash adds nothing.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Literal, get_args

import msgspec

PREFIX = {"sandbox": "sk_test_", "production": "sk_live_"}

#: What an API key may do (contract section 3); admin grants them, the gateway checks them.
Scope = Literal[
    "customers:write",
    "wallets:write",
    "virtual_accounts:write",
    "transfers:write",
    "payouts:write",
    "webhooks:write",
    "onboarding:write",
]
ALL_SCOPES: tuple[str, ...] = get_args(Scope)


def generate_api_key(mode: str) -> str:
    return PREFIX[mode] + secrets.token_urlsafe(32)


def hash_api_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def key_cache_name(key_hash: str) -> str:
    return f"sluice:apikey:{key_hash}"


def tenant_cache_name(tenant_id: str) -> str:
    return f"sluice:tenant:{tenant_id}"


class KeyRecord(msgspec.Struct, kw_only=True):
    """What the gateway caches per key hash; ``revoked`` entries are cached too."""

    key_id: str
    tenant_id: str
    mode: str
    scopes: list[str]
    revoked: bool = False


class TenantRecord(msgspec.Struct, kw_only=True):
    tenant_id: str
    tenant_name: str
    default_mode: str
    rate_limit_per_minute: int
    live_enabled: bool
    metadata: dict[str, object] = msgspec.field(default_factory=dict)


def issue_access_token(
    secret: bytes, issuer: str, tenant_id: str, mode: str, scopes: list[str], ttl_seconds: int
) -> tuple[str, int]:
    """An HS256 JWT (contract section 2): ``iss, sub, mode, scopes, exp (<= 1 h), jti``."""
    import time

    import jwt

    exp = int(time.time()) + max(1, min(ttl_seconds, 3600))
    claims = {
        "iss": issuer,
        "sub": tenant_id,
        "mode": mode,
        "scopes": scopes,
        "exp": exp,
        "iat": int(time.time()),
        "jti": secrets.token_hex(16),
    }
    return jwt.encode(claims, secret, algorithm="HS256"), exp


def verify_access_token(secret: bytes, issuer: str, token: str) -> dict[str, object]:
    """Claims of a valid token; raises ``jwt.InvalidTokenError`` otherwise (expired, forged...)."""
    import jwt

    return jwt.decode(
        token, secret, algorithms=["HS256"], issuer=issuer, options={"require": ["exp", "iss", "sub", "jti"]}
    )

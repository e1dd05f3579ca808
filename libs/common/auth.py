"""API key format, hashing and the Redis cache names shared by the gateway and admin.

Keys are ``sk_test_`` / ``sk_live_`` + 32 random bytes (base64url). Only the SHA-256 of the
whole key is stored: a key has 256 bits of entropy, so a slow hash adds nothing.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Literal, get_args

import msgspec
from redis.asyncio import Redis

PREFIX = {"sandbox": "sk_test_", "production": "sk_live_"}

#: What an API key may do: each endpoint needs its own scope (docs/security.md, "OWASP API
#: Security Top 10", API5); admin grants them, the gateway checks them.
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


def token_cache_name(jti: str) -> str:
    """The cache entry of an access token's revocation state, by its ``jti``."""
    return f"sluice:jti:{jti}"


# ---- versioned cache entries (a revocation or tenant change holds on every gateway within
# 1 s: docs/security.md, "OWASP API Security Top 10", API2) ----
# Each entry has a generation counter. A gateway reads the generation before it reads
# PostgreSQL and fills the entry only if the generation is unchanged (FILL_IF_CURRENT); the
# admin bumps the generation and drops the entry after its commit (evict). So a lookup that
# read the old row can never write it back after the eviction: either its fill lands before
# the eviction (and is dropped by it) or the generation moved (and the fill is refused).
GENERATION_TTL_S = 86400

# A filled entry keeps its generation alive at least as long as itself (ARGV[4], optional):
# the gateway's MAC covers the generation (common.cache_mac), so a generation that expired
# under a live entry would make that entry look put back after an eviction.
FILL_IF_CURRENT = """
local g = redis.call('GET', KEYS[2]) or ''
if g ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'EX', tonumber(ARGV[3]))
if g ~= '' and ARGV[4] then redis.call('EXPIRE', KEYS[2], tonumber(ARGV[4])) end
return 1
"""


def generation_name(cache_name: str) -> str:
    return cache_name + ":gen"


async def evict(redis: Redis, names: list[str]) -> None:
    """Bump each entry's generation and drop it, atomically (after the change committed)."""
    async with redis.pipeline(transaction=True) as pipe:
        for name in names:
            pipe.incr(generation_name(name))
            pipe.expire(generation_name(name), GENERATION_TTL_S)
            pipe.delete(name)
        await pipe.execute()


class KeyRecord(msgspec.Struct, kw_only=True):
    """What the gateway caches per key hash; ``revoked`` entries are cached too."""

    key_id: str
    tenant_id: str
    mode: str
    scopes: list[str]
    revoked: bool = False


class TokenRecord(msgspec.Struct, kw_only=True):
    """What the gateway caches per access token ``jti``: the row admin recorded when it issued
    the token (identity.access_tokens). A token whose jti has no row is refused."""

    tenant_id: str
    mode: str
    expires_at: int  # epoch seconds, as signed into the token's ``exp``
    revoked: bool = False


class TenantRecord(msgspec.Struct, kw_only=True):
    tenant_id: str
    tenant_name: str
    default_mode: str
    rate_limit_per_minute: int
    live_enabled: bool
    metadata: dict[str, object] = msgspec.field(default_factory=dict)
    disabled: bool = False  # disable_tenant: every credential of the tenant refused


def new_jti() -> str:
    """An access token's id: 128 random bits in hex (what :data:`JTI` accepts)."""
    return secrets.token_hex(16)


#: The ``jti`` the gateway accepts: bounded, so a revocation lookup or a control event can
#: never carry arbitrary text (tokens are signed, but a test or an old issuer may differ).
JTI_PATTERN = r"^[A-Za-z0-9_-]{8,64}$(?!\n)"

#: An access token lives at most this long, ``exp - iat`` (docs/guides/sandbox-and-live.md,
#: "Keys and modes": at most one hour).
MAX_TOKEN_LIFETIME_S = 3600


def issue_access_token(
    secret: bytes,
    issuer: str,
    tenant_id: str,
    mode: str,
    scopes: list[str],
    ttl_seconds: int,
    jti: str | None = None,
) -> tuple[str, int]:
    """An HS256 JWT (docs/guides/sandbox-and-live.md, "Keys and modes"): ``iss, sub, mode,
    scopes, exp (<= 1 h), jti`` (``jti`` given by admin, which records it so that it can be
    revoked)."""
    import time

    import jwt

    now = int(time.time())
    exp = now + max(1, min(ttl_seconds, MAX_TOKEN_LIFETIME_S))
    claims = {
        "iss": issuer,
        "sub": tenant_id,
        "mode": mode,
        "scopes": scopes,
        "exp": exp,
        "iat": now,
        "jti": jti or new_jti(),
    }
    return jwt.encode(claims, secret, algorithm="HS256"), exp


def verify_access_token(secret: bytes, issuer: str, token: str) -> dict[str, object]:
    """Claims of a valid token; raises ``jwt.InvalidTokenError`` otherwise (expired, forged...)."""
    import jwt

    required = ["exp", "iat", "iss", "sub", "jti"]
    return jwt.decode(token, secret, algorithms=["HS256"], issuer=issuer, options={"require": required})

"""common.auth under mutation: an API key's form and hash, the cache names the
gateway and admin share, an eviction's three steps per entry, and an access token's lifetime
and required claims. Against Redis and the services: tests/inprocess/test_security_revocation.py
and test_security_tokens.py."""

from __future__ import annotations

import base64
import hashlib
import re
import time
from typing import Any

import jwt
import pytest

from common.auth import (
    GENERATION_TTL_S,
    MAX_TOKEN_LIFETIME_S,
    evict,
    generate_api_key,
    generation_name,
    hash_api_key,
    issue_access_token,
    key_cache_name,
    new_jti,
    tenant_cache_name,
    token_cache_name,
    verify_access_token,
)

pytestmark = pytest.mark.unit

SECRET = b"s" * 64


def test_an_api_key_is_its_modes_prefix_and_32_random_bytes() -> None:
    for mode, prefix in (("sandbox", "sk_test_"), ("production", "sk_live_")):
        key = generate_api_key(mode)
        assert key.startswith(prefix)
        assert len(base64.urlsafe_b64decode(key[len(prefix) :] + "=")) == 32
    assert generate_api_key("sandbox") != generate_api_key("sandbox")
    assert hash_api_key("sk_test_x") == hashlib.sha256(b"sk_test_x").hexdigest()


def test_the_cache_names() -> None:
    assert key_cache_name("ab") == "sluice:apikey:ab"
    assert tenant_cache_name("ten_1") == "sluice:tenant:ten_1"
    assert token_cache_name("j1") == "sluice:jti:j1"
    assert generation_name("sluice:tenant:ten_1") == "sluice:tenant:ten_1:gen"


class Pipeline:
    def __init__(self, calls: list[Any]) -> None:
        self.calls = calls

    async def __aenter__(self) -> Pipeline:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.calls.append(("exit",))

    def incr(self, name: str) -> None:
        self.calls.append(("incr", name))

    def expire(self, name: str, seconds: int) -> None:
        self.calls.append(("expire", name, seconds))

    def delete(self, name: str) -> None:
        self.calls.append(("delete", name))

    async def execute(self) -> None:
        self.calls.append(("execute",))


class Redis:
    def __init__(self) -> None:
        self.calls: list[Any] = []

    def pipeline(self, transaction: bool) -> Pipeline:
        self.calls.append(("pipeline", transaction))
        return Pipeline(self.calls)


async def test_an_eviction_bumps_each_generation_and_drops_each_entry_in_one_transaction() -> None:
    redis = Redis()
    await evict(redis, ["a", "b"])  # type: ignore[arg-type]
    assert redis.calls == [
        ("pipeline", True),
        ("incr", "a:gen"),
        ("expire", "a:gen", GENERATION_TTL_S),
        ("delete", "a"),
        ("incr", "b:gen"),
        ("expire", "b:gen", GENERATION_TTL_S),
        ("delete", "b"),
        ("execute",),
        ("exit",),
    ]
    assert GENERATION_TTL_S == 86400


def test_a_jti_is_128_random_bits_in_hex() -> None:
    assert re.fullmatch(r"[0-9a-f]{32}", new_jti()) and new_jti() != new_jti()


def claims_of(token: str) -> dict[str, Any]:
    return jwt.decode(token, SECRET, algorithms=["HS256"], issuer="sluice")


def test_a_token_carries_its_claims_and_lives_between_one_second_and_an_hour() -> None:
    before = int(time.time())
    token, exp = issue_access_token(
        SECRET, "sluice", "ten_1", "sandbox", ["transfers:write"], 600, "jti_given_1"
    )
    claims = claims_of(token)
    assert claims == {
        "iss": "sluice",
        "sub": "ten_1",
        "mode": "sandbox",
        "scopes": ["transfers:write"],
        "exp": exp,
        "iat": claims["iat"],
        "jti": "jti_given_1",
    }
    assert before <= claims["iat"] <= int(time.time()) and exp - claims["iat"] == 600
    assert jwt.get_unverified_header(token)["alg"] == "HS256"
    for ttl, lives in ((0, 1), (-5, 1), (1, 1), (3600, 3600), (3601, MAX_TOKEN_LIFETIME_S), (10**6, 3600)):
        token, exp = issue_access_token(SECRET, "sluice", "ten_1", "live", [], ttl)
        claims = claims_of(token)
        assert exp - claims["iat"] == lives, ttl
        assert re.fullmatch(r"[0-9a-f]{32}", claims["jti"])  # made here when not given


def test_a_token_verifies_only_whole_signed_and_from_its_issuer() -> None:
    token, _ = issue_access_token(SECRET, "sluice", "ten_1", "sandbox", [], 60, "jti_given_1")
    assert verify_access_token(SECRET, "sluice", token)["sub"] == "ten_1"
    with pytest.raises(jwt.InvalidIssuerError):
        verify_access_token(SECRET, "other", token)
    with pytest.raises(jwt.InvalidSignatureError):
        verify_access_token(b"t" * 64, "sluice", token)
    now = int(time.time())
    full = {"iss": "sluice", "sub": "ten_1", "exp": now + 60, "iat": now, "jti": "jti_given_1"}
    for claim in ("exp", "iat", "iss", "sub", "jti"):
        partial = {k: v for k, v in full.items() if k != claim}
        with pytest.raises(jwt.MissingRequiredClaimError):
            verify_access_token(SECRET, "sluice", jwt.encode(partial, SECRET, algorithm="HS256"))
    with pytest.raises(jwt.InvalidAlgorithmError):
        verify_access_token(SECRET, "sluice", jwt.encode(full, SECRET, algorithm="HS512"))

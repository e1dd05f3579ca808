"""Authentication: API keys by hash, cached in Redis (versioned: see common.auth), and HS256
JWTs issued by the admin (``iss, sub, mode, scopes, exp, jti``).

Hot path: one Lua call reads the cached key and its tenant, counts the request in the
tenant's rate-limit window and, for a request with an Idempotency-Key, takes the key (or reads
its record): one round trip instead of four. A request refused after that gives the key back
(``gateway.pipeline``). A cold cache, a revoked or
unknown key, and JWTs take the slow path (Redis GETs, then PostgreSQL; the limiter counts).
The script touches keys it derives from the key record, so it needs one Redis (or a
cluster where those keys share a slot), which is what the suite runs on.

Every failure is ``unauthorized`` (401) or ``forbidden`` (403) in the envelope.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

import jwt
import msgspec
from redis.asyncio import Redis
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from common.auth import (
    FILL_IF_CURRENT,
    GENERATION_TTL_S,
    JTI_PATTERN,
    MAX_TOKEN_LIFETIME_S,
    KeyRecord,
    TenantRecord,
    TokenRecord,
    generation_name,
    hash_api_key,
    key_cache_name,
    tenant_cache_name,
    token_cache_name,
    verify_access_token,
)
from common.authfail import FailureLimiter
from common.cache_mac import CacheMac, Forged, refused
from common.errors import ErrorCode, Reason, ServiceError, forbidden
from gateway import ratelimit
from gateway import repository as repo
from gateway.idempotency import PREFIX as IDEM_PREFIX
from gateway.idempotency import Claimed
from gateway.ratelimit import window_start
from gateway.revocations import Revocations

CACHE_TTL_S = 300

# KEYS[1]: the key's cache entry. ARGV: tenant cache prefix, rate-window prefix, window start,
# window TTL; for a request with an Idempotency-Key also the idempotency prefix, the key's hash,
# the pending record and the lease in ms. Entries are MAC'd (common.cache_mac: ``head|value``),
# which the script cannot check: it returns each entry with its generation for the gateway to
# verify, and reads the key record's tenant and mode without trusting them (a forged record
# can at most count a request or take an Idempotency-Key, which a Valkey writer could anyway).
# Returns {} (key not cached), {key, kgen} (cached, not counted: unknown, revoked, unreadable
# or tenant not cached), {key, kgen, tenant, tgen, count} or, with an Idempotency-Key,
# {key, kgen, tenant, tgen, count, 1} (the key taken) or {..., count, 0, record}.
LOOKUP_AND_COUNT = """
local k = redis.call('GET', KEYS[1])
if not k then return {} end
local kg = redis.call('GET', KEYS[1] .. ':gen') or ''
local bar = string.find(k, '|', 1, true)
if not bar then return {k, kg} end
local ok, rec = pcall(cjson.decode, string.sub(k, bar + 1))
if not ok or type(rec) ~= 'table' or rec['revoked'] ~= false then return {k, kg} end
if type(rec['tenant_id']) ~= 'string' or type(rec['mode']) ~= 'string' then return {k, kg} end
local tn = ARGV[1] .. rec['tenant_id']
local t = redis.call('GET', tn)
if not t then return {k, kg} end
local tg = redis.call('GET', tn .. ':gen') or ''
local w = ARGV[2] .. rec['tenant_id'] .. ':' .. rec['mode'] .. ':' .. ARGV[3]
local n = redis.call('INCR', w)
if n == 1 then redis.call('EXPIRE', w, tonumber(ARGV[4])) end
if not ARGV[6] then return {k, kg, t, tg, n} end
local name = ARGV[5] .. rec['tenant_id'] .. ':' .. rec['mode'] .. ':' .. ARGV[6]
if redis.call('SET', name, ARGV[7], 'NX', 'PX', tonumber(ARGV[8])) then return {k, kg, t, tg, n, 1} end
local found = redis.call('GET', name)
if not found then return {k, kg, t, tg, n, 0} end
return {k, kg, t, tg, n, 0, found}
"""
_JTI = re.compile(JTI_PATTERN)
_key_dec = msgspec.json.Decoder(KeyRecord)
_tenant_dec = msgspec.json.Decoder(TenantRecord)
_token_dec = msgspec.json.Decoder(TokenRecord)
#: How far a token's ``iat`` may lie ahead of this clock (the admin's clock may run ahead).
CLOCK_SKEW_S = 60


Cached = tuple[KeyRecord | None, TenantRecord | None, tuple[int, int] | None, Claimed | None]


@dataclass(frozen=True, slots=True)
class ClaimWith:
    """An Idempotency-Key for the key lookup to take: its hash, the pending record, the lease."""

    key_hash: str
    pending: bytes
    lease_ms: int


@dataclass(frozen=True, slots=True)
class Principal:
    tenant: TenantRecord
    key_id: str
    mode: str
    scopes: frozenset[str]
    counted: tuple[int, int] | None = None  # (count, window start) if already counted
    claimed: Claimed | None = None  # what the lookup did with the Idempotency-Key, if anything


def _unauthorized(message: str) -> ServiceError:
    return ServiceError(ErrorCode.UNAUTHORIZED, message)


@dataclass(eq=False)
class Authenticator:
    redis: Redis
    sessions: async_sessionmaker[AsyncSession]
    mac: CacheMac
    jwt_secret: bytes = b""
    jwt_issuer: str = "sluice"
    failures: FailureLimiter | None = None
    # What PostgreSQL and admin's control events say was revoked: decides over any cached
    # record, and says whether cached records may be believed at all (gateway.revocations).
    revocations: Revocations = field(default_factory=Revocations)

    def __post_init__(self) -> None:
        self._lookup = self.redis.register_script(LOOKUP_AND_COUNT)
        self._fill_if_current = self.redis.register_script(FILL_IF_CURRENT)

    async def _read(self, kind: str, name: str, use_cache: bool = True) -> tuple[bytes | None, bytes]:
        """The verified cached value (None if not cached, expired or refused) and the name's
        generation, read before PostgreSQL (see common.auth). ``use_cache=False``: the
        generation only (the entry was already read and refused), as when the revocation floor
        is not fresh: then nothing cached is believed."""
        if not use_cache or not self.revocations.trusted():
            gen = await self.redis.get(generation_name(name))
            return None, gen if isinstance(gen, bytes) else b""
        raw, gen = await self.redis.mget(name, generation_name(name))
        gen = gen if isinstance(gen, bytes) else b""
        return self._verified(kind, name, raw, gen), gen

    def _verified(self, kind: str, name: str, raw: object, gen: bytes) -> bytes | None:
        if not isinstance(raw, bytes):
            return None
        try:
            return self.mac.open(name, raw, gen, CACHE_TTL_S)
        except Forged as err:
            refused(kind, err)
            return None

    async def _fill(self, name: str, gen: bytes, value: bytes, ttl_s: int, read_at: float) -> None:
        """Seal from ``read_at``, the time before PostgreSQL was read: the record expires at
        most ``ttl_s`` after the row was true, however slow the fill (gateway.revocations)."""
        sealed = self.mac.seal(name, gen, value, ttl_s, now=read_at)
        args: list[bytes | int] = [gen, sealed, ttl_s, GENERATION_TTL_S]
        await self._fill_if_current(keys=[name, generation_name(name)], args=args)

    async def _cached(self, key_hash: str, claim: ClaimWith | None = None) -> Cached | None:
        """From Redis alone: the key (None if known invalid), its tenant, the counted request and
        the Idempotency-Key's claim (None where not cached, verified, counted or claimed); None
        if the key is not cached or its entry does not verify (read PostgreSQL then), or if the
        revocation floor is not fresh (nothing cached is believed then)."""
        if not self.revocations.trusted():
            return None
        start = window_start(time.time())
        args: list[Any] = [tenant_cache_name(""), ratelimit.PREFIX, start, ratelimit.WINDOW_TTL_S]
        if claim is not None:
            args += [IDEM_PREFIX, claim.key_hash, claim.pending, claim.lease_ms]
        got = await self._lookup(keys=[key_cache_name(key_hash)], args=args)
        if not got:
            return None
        value = self._verified("api_key", key_cache_name(key_hash), got[0], got[1])
        if value is None:
            if claim is not None and len(got) > 5 and got[5] == 1:
                await self._give_back(got[0], claim)
            return None
        rec = _key_dec.decode(value) if value != b"-" else None
        if len(got) < 5 or rec is None:
            return rec, None, None, None
        claimed = None if len(got) < 6 else Claimed(bool(got[5]), got[6] if len(got) > 6 else None)
        tenant_value = self._verified("tenant", tenant_cache_name(rec.tenant_id), got[2], got[3])
        tenant = _tenant_dec.decode(tenant_value) if tenant_value is not None else None
        if tenant is not None and not self.revocations.believes_tenant(tenant.tenant_id, tenant.disabled):
            tenant = None  # disabled lately, or announced changed and not read since: read PostgreSQL
        return rec, tenant, (int(got[4]), start), claimed

    async def _give_back(self, raw: bytes, claim: ClaimWith) -> None:
        """The Idempotency-Key the script took on the strength of a key entry that was then
        refused: released (named by the entry's unverified tenant and mode, as the script did)."""
        try:
            rec = _key_dec.decode(raw.partition(b"|")[2])
        except msgspec.DecodeError:
            return
        await self.redis.delete(f"{IDEM_PREFIX}{rec.tenant_id}:{rec.mode}:{claim.key_hash}")

    async def _key(self, key_hash: str, use_cache: bool = True) -> KeyRecord | None:
        name = key_cache_name(key_hash)
        cached, gen = await self._read("api_key", name, use_cache)
        if cached is not None:
            return _key_dec.decode(cached) if cached != b"-" else None
        read_at = time.time()
        async with self.sessions() as session:
            row = await repo.key_by_hash(session, key_hash)
        if row is None:
            await self._fill(name, gen, b"-", 30, read_at)
            return None
        rec = KeyRecord(
            key_id=row.id,
            tenant_id=str(row.tenant_id),
            mode=row.mode,
            scopes=list(row.scopes),
            revoked=row.revoked_at is not None,
        )
        await self._fill(name, gen, msgspec.json.encode(rec), CACHE_TTL_S, read_at)
        return rec

    async def tenant(self, tenant_id: str, use_cache: bool = True) -> TenantRecord | None:
        name = tenant_cache_name(tenant_id)
        cached, gen = await self._read("tenant", name, use_cache)
        if cached is not None:
            rec = _tenant_dec.decode(cached)
            if self.revocations.believes_tenant(rec.tenant_id, rec.disabled):
                return rec
        read_at = time.time()
        async with self.sessions() as session:
            row = await repo.tenant_by_id(session, tenant_id)
        if row is None:
            return None
        rec = TenantRecord(
            tenant_id=str(row.id),
            tenant_name=row.name,
            default_mode=row.default_mode,
            rate_limit_per_minute=row.rate_limit_per_minute,
            live_enabled=row.live_enabled,
            metadata=row.metadata or {},
            disabled=row.disabled_at is not None,
        )
        await self._fill(name, gen, msgspec.json.encode(rec), CACHE_TTL_S, read_at)
        return rec

    async def authenticate(
        self, authorization: str | None, client_ip: str | None = None, claim: ClaimWith | None = None
    ) -> Principal:
        """The principal; 401 for a bad credential (counted against ``client_ip``), 429 when
        that address failed too often (checked before anything reaches PostgreSQL). ``claim``:
        an Idempotency-Key the key lookup takes in its round trip (``Principal.claimed``)."""
        try:
            return await self._authenticate(authorization, client_ip, claim)
        except ServiceError as err:
            if err.code == ErrorCode.UNAUTHORIZED and self.failures is not None:
                await self.failures.record(client_ip)
            raise

    async def _authenticate(
        self, authorization: str | None, client_ip: str | None, claim: ClaimWith | None
    ) -> Principal:
        if not authorization:
            raise _unauthorized("missing bearer token")
        scheme, _, token = authorization.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise _unauthorized("authorization must be 'Bearer <API_KEY>'")
        tenant: TenantRecord | None = None
        counted: tuple[int, int] | None = None
        claimed: Claimed | None = None
        if token.startswith(("sk_test_", "sk_live_")):
            key_hash = hash_api_key(token)
            cached = await self._cached(key_hash, claim)
            if cached is not None:
                rec, tenant, counted, claimed = cached
            else:
                await self._check_failures(client_ip)
                rec = await self._key(key_hash, use_cache=False)
            if rec is None:
                raise _unauthorized("invalid API key")
            if rec.revoked or self.revocations.key_revoked(key_hash):
                await self._give_back_claim(rec, claim, claimed)
                raise _unauthorized("API key has been revoked")
        elif token.count(".") == 2 and self.jwt_secret:
            await self._check_failures(client_ip)
            rec, exp = self._jwt(token)
            await self._check_recorded(rec, exp)
        else:
            raise _unauthorized("invalid API key")
        if tenant is None:  # counted: the script read the tenant's entry, which did not verify
            tenant = await self.tenant(rec.tenant_id, use_cache=counted is None)
        if tenant is None:
            raise _unauthorized("invalid credential")
        # disable_tenant: every credential of the tenant, until enable_tenant
        if tenant.disabled:
            await self._give_back_claim(rec, claim, claimed)
            raise forbidden(Reason.TENANT_DISABLED, "this tenant is disabled; contact the operator")
        return Principal(
            tenant=tenant,
            key_id=rec.key_id,
            mode=rec.mode,
            scopes=frozenset(rec.scopes),
            counted=counted,
            claimed=claimed,
        )

    async def _give_back_claim(
        self, rec: KeyRecord, claim: ClaimWith | None, claimed: Claimed | None
    ) -> None:
        """The Idempotency-Key the lookup took for a request then refused: given back."""
        if claim is not None and claimed is not None and claimed.owned:
            await self.redis.delete(f"{IDEM_PREFIX}{rec.tenant_id}:{rec.mode}:{claim.key_hash}")

    async def _check_recorded(self, rec: KeyRecord, exp: int) -> None:
        """A verified token is accepted only if admin recorded its jti when it issued it, for
        this tenant and mode with this expiry, and has not revoked it (docs/security.md,
        "Round 5: Valkey is a cache, never a root of trust")."""
        recorded = await self._token(rec.key_id.removeprefix("jwt:"))
        if recorded is None:
            raise _unauthorized("invalid access token")  # signed, but admin never issued it
        if recorded.tenant_id != rec.tenant_id or recorded.mode != rec.mode or exp > recorded.expires_at:
            raise _unauthorized("invalid access token")
        if recorded.revoked or self.revocations.token_revoked(rec.key_id.removeprefix("jwt:")):
            raise _unauthorized("access token has been revoked")

    async def _token(self, jti: str) -> TokenRecord | None:
        """The access token admin recorded as ``jti`` (None if none): cached like a key
        (versioned, evicted by revoke_access_token after its commit and by its control event),
        else PostgreSQL."""
        name = token_cache_name(jti)
        cached, gen = await self._read("access_token", name)
        if cached is not None:
            return _token_dec.decode(cached) if cached != b"-" else None
        read_at = time.time()
        async with self.sessions() as session:
            row = await repo.access_token(session, jti)
        if row is None:
            await self._fill(name, gen, b"-", 30, read_at)
            return None
        rec = TokenRecord(
            tenant_id=str(row.tenant_id),
            mode=row.mode,
            expires_at=int(row.expires_at.timestamp()),
            revoked=row.revoked_at is not None,
        )
        await self._fill(name, gen, msgspec.json.encode(rec), CACHE_TTL_S, read_at)
        return rec

    async def _check_failures(self, client_ip: str | None) -> None:
        if self.failures is not None:
            await self.failures.check(client_ip)

    def _jwt(self, token: str) -> tuple[KeyRecord, int]:
        """A verified access token as a key record (tenant = sub, mode and scopes from claims)
        and its ``exp``; refused if it lives longer than MAX_TOKEN_LIFETIME_S (``exp - iat``)
        or was issued in the future."""
        try:
            claims = verify_access_token(self.jwt_secret, self.jwt_issuer, token)
        except jwt.ExpiredSignatureError:
            raise _unauthorized("access token has expired") from None
        except jwt.InvalidTokenError:
            raise _unauthorized("invalid access token") from None
        sub, mode, scopes, jti = (
            claims.get("sub"),
            claims.get("mode"),
            claims.get("scopes"),
            claims.get("jti"),
        )
        iat, exp = claims.get("iat"), claims.get("exp")
        if (
            not isinstance(sub, str)
            or mode not in ("sandbox", "production")
            or not isinstance(scopes, list)
            or not all(isinstance(s, str) for s in scopes)
            or not isinstance(jti, str)
            or not _JTI.match(jti)
            or type(iat) is not int
            or type(exp) is not int
            or exp - iat > MAX_TOKEN_LIFETIME_S
            or iat > time.time() + CLOCK_SKEW_S
        ):
            raise _unauthorized("invalid access token")
        return KeyRecord(key_id=f"jwt:{jti}", tenant_id=sub, mode=str(mode), scopes=list(scopes)), exp


def require_mode(principal: Principal, mode_header: str | None) -> None:
    if mode_header is not None and mode_header != principal.mode:
        raise ServiceError(
            ErrorCode.FORBIDDEN,
            f"x-service-mode {mode_header[:20]!r} does not match the credential's mode {principal.mode!r}",
            details={"reason": "mode_mismatch"},
        )


def require_scope(principal: Principal, scope: str | None) -> None:
    if scope is not None and scope not in principal.scopes:
        raise ServiceError(
            ErrorCode.FORBIDDEN,
            f"this key lacks the scope {scope}",
            details={"reason": "scope_missing", "scope": scope},
        )

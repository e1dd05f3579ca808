"""The request pipeline every partner endpoint goes through, in both access forms, once the
door (gateway.door.asgi) has admitted the request:

authenticate -> scope -> IP allowlist -> rate limit -> idempotency key -> validate ->
idempotency (replay / mismatch / wait) -> publish command -> await result -> answer.
"""

from __future__ import annotations

import ipaddress
import logging
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec
from aiokafka.errors import KafkaError
from redis.exceptions import RedisError
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from common.contracts import Command, Ctx, Result
from common.contracts.base import as_mode
from common.contracts.commands import partition_key
from common.errors import ErrorCode, ServiceError, Unavailable, envelope, unavailable
from common.keyring import KeyRing, KeyRingError, open_reply_secrets
from common.metrics import IDEMPOTENCY_REPLAYS, UNAVAILABLE
from common.rpc import RpcClient
from common.settings import Settings
from common.topics import Topic, Topics
from gateway.auth import Authenticator, ClaimWith, Principal, require_mode, require_scope
from gateway.door.asgi import Identities
from gateway.idempotency import Claimed, IdempotencyStore, command_id, fingerprint, validate_key
from gateway.ratelimit import RateLimiter, Window

log = logging.getLogger(__name__)

_enc = msgspec.json.Encoder(decimal_format="string")
# TimeoutError: asyncpg's command timeout on a hung PostgreSQL reaches here unwrapped (a BEGIN or a
# lookup that got no answer); the reply's own wait is upstream_timeout, decided in _run.
STORE_ERRORS = (RedisError, SQLAlchemyError, KafkaError, ConnectionError, TimeoutError)


@dataclass(slots=True)
class Call:
    """Everything a builder needs to turn a request into a command (or a local answer)."""

    principal: Principal
    ctx: Ctx
    body: Any  # decoded JSON (None for GET)
    raw: bytes
    params: dict[str, str]
    query: dict[str, str]
    window: Window
    request_id: str
    settings: Settings
    # for the builders that answer locally from the gateway's table
    sessions: async_sessionmaker[AsyncSession]


@dataclass(slots=True, frozen=True)
class Incoming:
    """A request as the transport decoded it, in either access form."""

    headers: dict[str, str]  # lower-case names
    raw: bytes
    body: Any  # decoded JSON (None for GET)
    params: dict[str, str]
    query: dict[str, str]
    request_id: str
    client_ip: str | None


@dataclass(slots=True)
class Local:
    """An answer the gateway gives itself (health, onboarding link issuance)."""

    status: int
    data: Any


Builder = Callable[[Call], Awaitable[Command | Local] | Command | Local]


@dataclass(frozen=True, slots=True)
class Endpoint:
    method: str
    path: str  # template, e.g. /v1/customers/{customer_id}
    scope: str | None
    build: Builder
    topic: Topic | None = None  # where the command goes; None: the builder answers locally
    # Documentation (OpenAPI) and routing hints; none of them changes the pipeline's order.
    summary: str = ""
    # msgspec struct of the JSON body, or a tagged union of them named in gateway.schemas.UNIONS
    request: Any = None
    response: type | None = None  # msgspec struct of ``data`` on success
    status: int = 200  # success status
    query: type | None = None  # msgspec struct of the query parameters
    listing: bool = False  # ``data`` is ``{items: [response], next_cursor}``
    sandbox_only: bool = False  # production answers 404 not_found (no such route)

    @property
    def mutating(self) -> bool:
        return self.method in ("POST", "PATCH", "PUT", "DELETE")


@dataclass(slots=True)
class KeyClaim:
    """A request's Idempotency-Key, taken (or its record read) by the key lookup's round trip
    (``taken``) until the dispatch uses it; a request refused before that gives it back."""

    key: str
    request_fingerprint: str
    pending: ClaimWith
    taken: Claimed | None = None
    used: bool = False

    def unused(self) -> bool:
        return self.taken is not None and self.taken.owned and not self.used


@dataclass(slots=True)
class Answer:
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)


def success_body(data: Any) -> bytes:
    return _enc.encode({"success": True, "data": data})


def error_body(err: ServiceError, request_id: str) -> bytes:
    return _enc.encode(envelope(err.code, err.message, {**err.details, "request_id": request_id}))


def result_body(result: Result, request_id: str, ring: KeyRing | None = None) -> bytes:
    """The partner's answer. Secrets travel in ``result.sealed`` and are opened here (``ring``),
    only under the names ``common.keyring`` lists; ``data`` is never read for them (partner
    text that looks like ciphertext is text: docs/security.md, "Round 4")."""
    if result.error is None:
        data = (
            result.data
            if ring is None
            else open_reply_secrets(ring, result.data, result.sealed, result.command_id)
        )
        return success_body(data)
    details = {**result.error.details, "request_id": result.request_id or request_id}
    return _enc.encode(envelope(result.error.code, result.error.message, details))


_PARAM = re.compile(r"\{(\w+)\}")


def _ip_allowed(tenant_meta: dict[str, Any], client_ip: str | None) -> bool:
    allowed = tenant_meta.get("allowed_ips") if isinstance(tenant_meta, dict) else None
    if not allowed:
        return True
    if not client_ip:
        return False
    try:
        ip = ipaddress.ip_address(client_ip)
        return any(ip in ipaddress.ip_network(str(c), strict=False) for c in allowed)
    except ValueError:
        return False


class Pipeline:
    def __init__(
        self,
        settings: Settings,
        auth: Authenticator,
        limiter: RateLimiter,
        idem: IdempotencyStore,
        rpc: RpcClient,
        sessions: async_sessionmaker[AsyncSession],
        identities: Identities | None = None,
    ) -> None:
        self.settings = settings
        self.ring = settings.key_ring
        self.auth = auth
        self.limiter = limiter
        self.idem = idem
        self.rpc = rpc
        self.sessions = sessions
        self.topics = Topics(settings.topic_prefix)
        # command_id -> (idempotency record name, fingerprint): lets a late result be recorded.
        self.inflight: dict[str, tuple[str, str, float]] = {}
        # What the door learns from authentication: which tenant and mode a credential is.
        self.identities = identities or Identities()

    async def on_results(self, results: list[Result]) -> None:
        """Every result that reaches this instance is recorded, even if its waiter gave up:
        a fetched batch of outcomes is written in one Redis pipeline before anyone is answered."""
        done = []
        for result in results:
            entry = self.inflight.pop(result.command_id, None)
            if entry is None:
                continue
            name, request_fingerprint, _ = entry
            try:
                body = result_body(result, result.request_id, self.ring)
            except KeyRingError as exc:
                # This result alone is not recorded (its lease expires and a retry runs it
                # again); the others of the batch, other tenants' included, still are.
                log.error("a result's sealed secret does not open: %s (command %s)", exc, result.command_id)
                continue
            done.append((name, request_fingerprint, result.status, body))
        await self.idem.complete_many(done)
        if len(self.inflight) > 10000:
            cutoff = time.monotonic() - 3600
            for k in [k for k, v in self.inflight.items() if v[2] < cutoff]:
                self.inflight.pop(k, None)

    def _key_claim(self, ep: Endpoint, req: Incoming) -> KeyClaim | None:
        """The Idempotency-Key the key lookup takes in its round trip (a mutating request with a
        valid key: its refusals keep their order, they come after authentication)."""
        key = req.headers.get("idempotency-key") if ep.mutating else None
        if key is None:
            return None
        try:
            validate_key(key)
        except ServiceError:
            return None
        # The concrete path (docs/guides/idempotency.md, "What the gateway answers"): one key on
        # two webhooks' rotate-secret must not replay the first answer for the second.
        path = _PARAM.sub(lambda m: req.params.get(m.group(1), ""), ep.path)
        request_fingerprint = fingerprint(ep.method, path, req.body)
        pending = ClaimWith(
            self.idem.key_hash(key), self.idem.pending(request_fingerprint), self.idem.lease_ms
        )
        return KeyClaim(key, request_fingerprint, pending)

    async def handle(self, ep: Endpoint, req: Incoming) -> Answer:
        """A request as its stages: authenticate, authorize, limit, run; every refusal and
        every store failure on the way becomes an answer in one place (:meth:`_failure`). An
        Idempotency-Key the key lookup took for a request refused before it ran is given back."""
        key_claim = self._key_claim(ep, req)
        principal: Principal | None = None
        window: Window | None = None
        try:
            principal = await self._authenticate(req, key_claim)
            await self._authorize(ep, req, principal)
            window = await self._limit(principal)
            answer = await self._run(ep, principal, window, req, key_claim)
        except (ServiceError, *STORE_ERRORS) as exc:
            answer = self._failure(exc, req.request_id)
        finally:
            if principal is not None and key_claim is not None and key_claim.unused():
                await self._give_key_back(principal, key_claim.key)
        if window is not None:
            for k, v in window.headers().items():
                answer.headers.setdefault(k, v)
        return answer

    async def _authenticate(self, req: Incoming, key_claim: KeyClaim | None) -> Principal:
        """Who is asking; the key lookup's round trip also takes the Idempotency-Key and counts
        the request against the rate limit. The door learns which tenant the credential is."""
        authorization = req.headers.get("authorization")
        principal = await self.auth.authenticate(
            authorization, req.client_ip, key_claim.pending if key_claim else None
        )
        if key_claim is not None:
            key_claim.taken = principal.claimed
        self.identities.learn(authorization, principal.tenant.tenant_id, principal.mode)
        return principal

    async def _authorize(self, ep: Endpoint, req: Incoming, principal: Principal) -> None:
        """Mode, scope and the tenant's IP allowlist. A request refused here does not count
        against the rate limit: what the key lookup counted is given back."""
        try:
            require_mode(principal, req.headers.get("x-service-mode"))
            require_scope(principal, ep.scope)
            if not _ip_allowed(principal.tenant.metadata, req.client_ip):
                raise ServiceError(
                    ErrorCode.FORBIDDEN,
                    "requests from this IP address are not allowed",
                    details={"reason": "ip_not_allowed"},
                )
        except ServiceError:
            if principal.counted is not None:
                tenant, (_, start) = principal.tenant.tenant_id, principal.counted
                await self.limiter.give_back(tenant, principal.mode, start)
            raise

    async def _limit(self, principal: Principal) -> Window:
        """The tenant's rate limit: already counted by the key lookup in the same round trip
        when it could be, else one hit of its own."""
        limit = principal.tenant.rate_limit_per_minute
        if principal.counted is not None:
            return self.limiter.check(limit, *principal.counted)
        return await self.limiter.hit(principal.tenant.tenant_id, principal.mode, limit)

    @staticmethod
    def _failure(exc: Exception, request_id: str) -> Answer:
        """A refusal's answer, or fail closed on a store that cannot answer: a check that
        cannot be made is a refusal the caller may retry (503 store_unavailable)."""
        if not isinstance(exc, ServiceError):
            log.warning("a store is unavailable: %r", exc)
            exc = unavailable(
                Unavailable.STORE_UNAVAILABLE,
                "a service the gateway needs is unavailable; retry with the same Idempotency-Key",
            )
        answer = Answer(exc.status, error_body(exc, request_id), dict(exc.headers))
        if exc.code == ErrorCode.UNAUTHORIZED:
            answer.headers.setdefault("WWW-Authenticate", "Bearer")
        elif exc.status == 503:  # a failure of admitted work (the door sheds before)
            UNAVAILABLE.labels(str(exc.details.get("reason", "unknown"))).inc()
        return answer

    async def _give_key_back(self, principal: Principal, key: str) -> None:
        """A request refused after the key lookup took its Idempotency-Key leaves no lease."""
        try:
            await self.idem.abandon(self.idem.name(principal.tenant.tenant_id, principal.mode, key))
        except STORE_ERRORS as exc:  # the lease expires on its own
            log.warning("could not give an idempotency key back: %r", exc)

    async def _run(
        self, ep: Endpoint, principal: Principal, window: Window, req: Incoming, key_claim: KeyClaim | None
    ) -> Answer:
        body, params, request_id = req.body, req.params, req.request_id
        if ep.sandbox_only and principal.mode != "sandbox":
            raise ServiceError(ErrorCode.NOT_FOUND, "no such route")
        key = validate_key(req.headers.get("idempotency-key")) if ep.mutating else None
        ctx = Ctx(
            request_id=request_id,
            tenant_id=principal.tenant.tenant_id,
            mode=as_mode(principal.mode),
            live_enabled=principal.tenant.live_enabled,
            reply_to=self.rpc.reply_topic,
            idempotency_key=key,
        )
        call = Call(
            principal, ctx, body, req.raw, params, req.query, window, request_id, self.settings, self.sessions
        )
        made = ep.build(call)
        built = made if isinstance(made, Command | Local) else await made
        if isinstance(built, Local) and not ep.mutating:
            return Answer(built.status, success_body(built.data))
        return await self._dispatch(ep, principal, req, key, built, key_claim)

    async def _dispatch(
        self,
        ep: Endpoint,
        principal: Principal,
        req: Incoming,
        key: str | None,
        built: Command | Local,
        key_claim: KeyClaim | None,
    ) -> Answer:
        """Idempotency (replay, or claim the key), then the command's round trip."""
        request_id = req.request_id
        name = request_fingerprint = ""
        if key is not None:
            assert key_claim is not None and key_claim.key == key  # a valid key: _key_claim made its claim
            request_fingerprint, first, key_claim.used = key_claim.request_fingerprint, key_claim.taken, True
            name = self.idem.name(principal.tenant.tenant_id, principal.mode, key)
            replay = await self.idem.begin(name, request_fingerprint, first)
            if replay is not None:
                IDEMPOTENCY_REPLAYS.inc()
                return Answer(replay.status, replay.body, {"X-Idempotent-Replay": "true"})
            if isinstance(built, Command):  # every retry of this request: the same command
                cid = command_id(principal.tenant.tenant_id, principal.mode, key, request_fingerprint)
                built = msgspec.structs.replace(built, command_id=cid)
        if isinstance(built, Local):
            out = Answer(built.status, success_body(built.data))
            if key is not None:
                await self.idem.complete(name, request_fingerprint, out.status, out.body)
            return out
        assert ep.topic is not None and isinstance(built, Command)
        if key is not None:
            self.inflight[built.command_id] = (name, request_fingerprint, time.monotonic())
        try:
            result = await self.rpc.call(self.topics[ep.topic], built, key=partition_key(built))
        except TimeoutError:
            # Not an outcome: the lease stays until it expires (a retry meanwhile waits for
            # the real result, which on_results records whenever it arrives).
            raise unavailable(
                Unavailable.UPSTREAM_TIMEOUT,
                "the service did not answer in time; retry with the same Idempotency-Key",
            ) from None
        except Exception:
            self.inflight.pop(built.command_id, None)
            if key is not None:
                await self.idem.abandon(name)
            raise
        return Answer(result.status, result_body(result, request_id, self.ring))

"""Idempotency (docs/guides/idempotency.md; docs/failure-model.md, "Idempotency that survives a
dead gateway"), kept in Redis so every gateway instance and a restarted one see the same
records.

A record is ``pending`` (with the request fingerprint) while the command is in flight and
``done`` (status and body) once an outcome was decided; ``done`` lives ``idempotency_ttl_s``.

``pending`` is a bounded lease: the command's deadline plus a margin, not minutes. If the
gateway holding it dies, a retry on any gateway takes the key over when the lease expires
and publishes the command again under the same command id (:func:`command_id`, derived
from tenant, mode, key and fingerprint): compliance and the ledger find it in their inbox
and answer the original outcome, or execute it for the first time. Never two effects.

An outcome that invites a retry (any 5xx) is never stored as final: the lease is released
so the retry runs again.

A ``done`` record is replayed only if it carries the gateway's MAC over its name, value and
expiry (common.cache_mac): one written by anyone else (an unsigned one, one copied from another
name, one kept past its expiry) is refused, counted
(``sluice_gateway_cache_forged_total{kind="idempotency"}``) and dropped, and the request runs
under its deterministic command id, which compliance and the ledger deduplicate. A ``pending``
record carries no authority: it makes a retry wait or answer 409, which a Valkey writer could
cause anyway by deleting or changing records.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from dataclasses import dataclass

import msgspec
from redis.asyncio import Redis

from common.cache_mac import CacheMac, Forged, refused
from common.errors import ErrorCode, ServiceError, Unavailable, unavailable
from common.keyring import KeyRing

PREFIX = "sluice:idem:"


@dataclass(frozen=True, slots=True)
class Claimed:
    """What the key lookup's script (``gateway.auth``) did with the request's Idempotency-Key
    in the same round trip: took it (``owned``), or found the record there (``found``)."""

    owned: bool
    found: bytes | None = None


class Record(msgspec.Struct, kw_only=True):
    state: str  # pending | done
    request_fingerprint: str = msgspec.field(name="fp")  # stored in Redis as "fp"
    status: int = 0
    body: bytes = b""


_dec = msgspec.json.Decoder(Record)


def fingerprint(method: str, path: str, body: object) -> str:
    """The request's identity: method, concrete path (not the route template) and body."""
    canonical = msgspec.json.encode(body, order="sorted")
    return hashlib.sha256(f"{method} {path} ".encode() + canonical).hexdigest()


def command_id(tenant_id: str, mode: str, key: str, request_fingerprint: str) -> str:
    """The command id of a keyed request: the same for every retry of the same request, on
    any gateway, so the services that execute it deduplicate it through their inbox."""
    digest = hashlib.sha256(f"{tenant_id}\x00{mode}\x00{key}\x00{request_fingerprint}".encode()).hexdigest()
    return f"cmd_{digest[:32]}"


def invites_retry(status: int) -> bool:
    return status >= 500


@dataclass(frozen=True, slots=True)
class Replay:
    status: int
    body: bytes


def validate_key(key: str | None) -> str:
    if key is None:
        raise ServiceError(
            ErrorCode.IDEMPOTENCY_KEY_REQUIRED, "mutating requests need an Idempotency-Key header"
        )
    if not (8 <= len(key) <= 256) or any(not (0x20 <= ord(c) <= 0x7E) for c in key):
        raise ServiceError(
            ErrorCode.INVALID_REQUEST,
            "Idempotency-Key must be 8 to 256 printable ASCII characters",
            details={"field": "Idempotency-Key"},
        )
    return key


class IdempotencyStore:
    def __init__(
        self, redis: Redis, ttl_s: int, wait_s: float, ring: KeyRing, lease_s: float = 15.0, *, mac: CacheMac
    ) -> None:
        # Saved bodies can hold secrets shown once (webhook signing secrets, onboarding links):
        # they are sealed with the key ring (bound to the record name), never in clear.
        self.ring = ring
        self.mac = mac
        self.redis = redis
        self.ttl_s = ttl_s
        self.wait_s = wait_s
        self.lease_ms = int(lease_s * 1000)

    @staticmethod
    def key_hash(key: str) -> str:
        return hashlib.sha256(key.encode()).hexdigest()

    @classmethod
    def name(cls, tenant_id: str, mode: str, key: str) -> str:
        return f"{PREFIX}{tenant_id}:{mode}:{cls.key_hash(key)}"

    @staticmethod
    def pending(request_fingerprint: str) -> bytes:
        """The record a request that owns its key leaves while it runs."""
        return msgspec.json.encode(Record(state="pending", request_fingerprint=request_fingerprint))

    async def begin(self, name: str, request_fingerprint: str, first: Claimed | None = None) -> Replay | None:
        """None: this request owns the key and must run. Otherwise the outcome to replay.
        ``first``: the claim the key lookup already made (its first try, without a call)."""
        pending = self.pending(request_fingerprint)
        deadline = time.monotonic() + self.wait_s
        raw: bytes | str | None
        while True:
            if first is not None:
                if first.owned:
                    return None
                raw, first = first.found, None
            elif await self.redis.set(name, pending, nx=True, px=self.lease_ms):
                return None
            else:
                raw = await self.redis.get(name)
            if raw is None:
                continue  # expired between the two calls: try to own it again
            rec = self._record(name, raw)
            if rec is None:
                await self.redis.delete(name)  # refused: dropped, and this request runs
                continue
            if rec.request_fingerprint != request_fingerprint:
                raise ServiceError(
                    ErrorCode.IDEMPOTENCY_REPLAY_MISMATCH,
                    "this Idempotency-Key was used with a different request",
                )
            if rec.state == "done":
                return Replay(rec.status, self._open(name, rec.body))
            if time.monotonic() >= deadline:
                raise unavailable(
                    Unavailable.IN_FLIGHT, "the original request with this Idempotency-Key is still in flight"
                )
            await asyncio.sleep(0.02)

    async def complete(self, name: str, request_fingerprint: str, status: int, body: bytes) -> None:
        await self.complete_many([(name, request_fingerprint, status, body)])

    async def complete_many(self, outcomes: list[tuple[str, str, int, bytes]]) -> None:
        """Record several outcomes (name, fingerprint, status, body) in one round trip.

        An outcome that invites a retry (5xx) is not recorded: its pending lease is released
        instead, so the client's retry runs the request again."""
        if not outcomes:
            return
        async with self.redis.pipeline(transaction=False) as pipe:
            for name, request_fingerprint, status, body in outcomes:
                if invites_retry(status):
                    pipe.delete(name)
                    continue
                rec = Record(
                    state="done",
                    request_fingerprint=request_fingerprint,
                    status=status,
                    body=self._seal(name, body),
                )
                pipe.set(name, self.mac.seal(name, b"", msgspec.json.encode(rec), self.ttl_s), ex=self.ttl_s)
            await pipe.execute()

    def _record(self, name: str, raw: bytes | str) -> Record | None:
        """The record read under ``name``: a pending one as it is, a done one only if its MAC
        verifies; None for one refused (counted) or expired."""
        data = raw.encode() if isinstance(raw, str) else raw
        try:
            if data.startswith(b"{"):
                rec = _dec.decode(data)
                if rec.state != "pending":
                    raise Forged("unsigned")
                return rec
            value = self.mac.open(name, data, b"", self.ttl_s)
            if value is None:
                return None
            rec = _dec.decode(value)
        except msgspec.DecodeError:
            refused("idempotency", Forged("format"))
            return None
        except Forged as err:
            refused("idempotency", err)
            return None
        return rec if rec.state == "done" else None

    def _seal(self, name: str, body: bytes) -> bytes:
        return self.ring.seal(body, name)

    def _open(self, name: str, sealed: bytes) -> bytes:
        return self.ring.open(sealed, name)

    async def abandon(self, name: str) -> None:
        """Forget a pending record whose command was never dispatched."""
        await self.redis.delete(name)

"""MACs on every record the gateway trusts from Valkey (docs/security.md, "Round 5: Valkey is a
cache, never a root of trust").

Valkey is a cache, never a source of trust: whoever can write to it could otherwise invent an
API key (a JSON record under ``sluice:apikey:<sha256>``), lift a tenant's ``disabled`` flag,
undo a revocation or forge an idempotent replay. Each such record is stored as

    m1.<kid>.<generation>.<expiry>.<base64url HMAC-SHA256>|<value>

where the MAC, under ``SLUICE_GATEWAY_CACHE_KEY`` (which only the gateway holds), covers the
key id, the record's Valkey name, the generation of that name (``common.auth``: bumped by every
eviction) read before the value was looked up, the expiry (epoch seconds, never further than
the record's TTL) and the value. So a record is refused when it was written by anyone but a
gateway, copied to another name, restored from before an eviction (its generation moved) or
kept past its expiry; the gateway then reads PostgreSQL, counts it in
``sluice_gateway_cache_forged_total{kind}`` and logs a warning naming the kind (never a value
or a key). The generation lives in the same Valkey, so it cannot say on its own whether a record
is still good (a record and its generation can be put back together): it only makes an
eviction hold at once; a revocation is decided from what the gateway learned from PostgreSQL
and admin's control events (docs/security.md, "A cache that cannot be rolled back"). The value
stays readable (the hot path's Lua reads a key record's tenant and mode to count the request);
nothing in it is a secret.

``SLUICE_GATEWAY_CACHE_KEY`` is ``kid:base64key,...`` (32-byte keys): the first key signs,
every key verifies, so a new key is put first and the old one kept for one cache TTL.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import logging
import re
import time

from prometheus_client import Counter

from common.secret_strength import ADVICE, weakness

log = logging.getLogger(__name__)

FORGED = Counter(
    "sluice_gateway_cache_forged_total",
    "Records read from Valkey whose MAC, name, generation or expiry did not verify (refused)",
    ["kind"],
)

VERSION = b"m1"
_KID = re.compile(r"^[A-Za-z0-9_-]{1,32}$")
_DOMAIN = b"sluice-gateway-cache/1"
#: Clock difference tolerated between gateways when judging an expiry that lies too far ahead.
SKEW_S = 60


class CacheKeyError(ValueError):
    """A malformed ``SLUICE_GATEWAY_CACHE_KEY``; the message never holds key material."""


class Forged(Exception):
    """A record that does not verify; ``reason`` names why (never a value)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _field(part: bytes) -> bytes:
    return len(part).to_bytes(8, "big") + part


class CacheMac:
    def __init__(self, keys: list[tuple[str, bytes]]) -> None:
        if not keys:
            raise CacheKeyError("SLUICE_GATEWAY_CACHE_KEY needs at least one key")
        self._keys: dict[str, bytes] = {}
        for kid, key in keys:
            if not _KID.match(kid):
                raise CacheKeyError(f"key id {kid[:40]!r} must be 1-32 of A-Z a-z 0-9 _ -")
            if len(key) != 32:
                raise CacheKeyError(f"key {kid!r} must be 32 bytes (base64 of 32 random bytes)")
            if kid in self._keys:
                raise CacheKeyError(f"key id {kid!r} appears twice")
            self._keys[kid] = key
        self.current = keys[0][0]

    @classmethod
    def parse(cls, setting: str) -> CacheMac:
        keys = []
        for n, entry in enumerate(e.strip() for e in setting.split(",") if e.strip()):
            kid, sep, b64 = entry.partition(":")
            if not sep:
                raise CacheKeyError(f"entry {n + 1} of SLUICE_GATEWAY_CACHE_KEY is not kid:base64key")
            try:
                key = base64.b64decode(b64, validate=True)
            except (binascii.Error, ValueError):
                raise CacheKeyError(f"key {kid[:32]!r} is not valid base64") from None
            keys.append((kid, key))
        return cls(keys)

    def _mac(self, kid: str, name: str, gen: bytes, expiry: int, value: bytes) -> bytes:
        message = b"".join(
            _field(p) for p in (_DOMAIN, kid.encode(), name.encode(), gen, str(expiry).encode(), value)
        )
        return hmac.new(self._keys[kid], message, hashlib.sha256).digest()

    def seal(self, name: str, gen: bytes, value: bytes, ttl_s: float, now: float | None = None) -> bytes:
        """``value`` as stored under ``name``, read at generation ``gen``, for ``ttl_s``."""
        expiry = int((time.time() if now is None else now) + ttl_s) + 1
        mac = base64.urlsafe_b64encode(self._mac(self.current, name, gen, expiry, value)).rstrip(b"=")
        head = b".".join((VERSION, self.current.encode(), gen, str(expiry).encode(), mac))
        return head + b"|" + value

    def open(
        self, name: str, raw: bytes, gen: bytes, max_ttl_s: float, now: float | None = None
    ) -> bytes | None:
        """The value of a record read under ``name`` while the name's generation was ``gen``;
        None if it merely expired (a miss); :class:`Forged` if it does not verify."""
        head, bar, value = raw.partition(b"|")
        parts = head.split(b".")
        if not bar or len(parts) != 5 or parts[0] != VERSION:
            raise Forged("format")
        kid, sealed_gen, expiry_text, mac_text = (
            parts[1].decode(errors="replace"),
            parts[2],
            parts[3],
            parts[4],
        )
        if kid not in self._keys:
            raise Forged("unknown_key")
        if not expiry_text.isdigit() or len(expiry_text) > 12:
            raise Forged("format")
        expiry = int(expiry_text)
        try:
            mac = base64.urlsafe_b64decode(mac_text + b"=" * (-len(mac_text) % 4))
        except (binascii.Error, ValueError):
            raise Forged("format") from None
        if not hmac.compare_digest(mac, self._mac(kid, name, sealed_gen, expiry, value)):
            raise Forged("mac")
        now = time.time() if now is None else now
        if expiry > now + max_ttl_s + SKEW_S:
            raise Forged("expiry")
        if not hmac.compare_digest(sealed_gen, gen):
            raise Forged("generation")  # written before an eviction, and put back
        if expiry < now:
            return None
        return value


def weak_cache_keys(setting: str, production: bool) -> list[str]:
    """Why ``SLUICE_GATEWAY_CACHE_KEY`` is unusable (empty list if it is fine or unset: a
    missing one is reported with the other secrets); in production each key must also pass
    common.secret_strength. Never echoes key material."""
    if not setting.strip():
        return []
    try:
        CacheMac.parse(setting)
    except CacheKeyError as exc:
        return [f"SLUICE_GATEWAY_CACHE_KEY ({exc})"]
    out = []
    if production:
        for entry in (e.strip() for e in setting.split(",") if e.strip()):
            kid, _, b64 = entry.partition(":")
            reason = weakness(b64)
            if reason is not None:
                out.append(f"SLUICE_GATEWAY_CACHE_KEY (key {kid!r}: {reason}; {ADVICE})")
    return out


def refused(kind: str, err: Forged) -> None:
    """Count and log a forged record: the kind and the reason, never the name or the value."""
    FORGED.labels(kind).inc()
    log.warning(
        "gateway cache: a %s record in Valkey failed verification (%s); refused, read from the database",
        kind,
        err.reason,
        extra={"cache_kind": kind, "reason": err.reason},
    )

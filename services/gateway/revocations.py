"""What the gateway knows, in memory, about revocations, so that a rolled-back Valkey cannot
bring a revoked credential back (docs/security.md, "A cache that cannot be rolled back").

Every record the gateway trusts from Valkey carries its MAC (``common.cache_mac``), so no one
but a gateway can write one; but an old, genuine record can be put back, and the generation
counter that dated it lives in the same Valkey, unauthenticated. Whether a cached credential is
still good is therefore decided here, from two sources Valkey cannot touch:

- **PostgreSQL** (the owner's record): every ``poll_s`` the gateway reads the keys and access
  tokens revoked, and the tenants disabled, within the last ``RETAIN_S`` (one indexed query);
- **admin's control events** (only admin may write the control topic): a revoked key or token
  is refused from the moment its event is read; a changed tenant's cached record is not
  believed until the next poll has read its row.

A revoked key or token is refused outright (neither comes back); a cached tenant record that
says "not disabled" is not believed while PostgreSQL says the tenant was disabled lately: the
row is read instead, and decides.

The bound: a cached record is believed only while the last successful poll started less than
``trust_s`` ago. A poll that starts after admin's commit sees the revocation, so a revoked
credential is refused on every gateway at most ``trust_s`` after the commit, whatever Valkey
holds: sooner if the poll or the event arrives first. If PostgreSQL cannot be read for longer,
every credential is read from PostgreSQL (and refused while it is unreachable): fail closed.

Why ``RETAIN_S`` suffices: a record sealed from a row read before the revocation expires at
most ``CACHE_TTL_S`` after that read (the MAC covers the expiry), plus the clock difference
tolerated between gateways (``common.cache_mac.SKEW_S``); the gateway remembers each revocation
for ``RETAIN_S``, more than that with minutes to spare (the database's clock, which dates the
poll's window, may differ from the gateways'), so by the time it forgets, every record that
predates it has expired.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gateway import repository as repo

log = logging.getLogger(__name__)

#: How long a revocation is remembered after it was last seen (seconds): the database window
#: the poll reads and the memory's retention. At least the cache TTL plus the clock skew
#: tolerated between gateways, with room for the database's clock.
RETAIN_S = 600


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One poll's answer: what PostgreSQL says was revoked or disabled in the last RETAIN_S."""

    key_hashes: frozenset[str] = frozenset()
    jtis: frozenset[str] = frozenset()
    disabled_tenants: frozenset[str] = frozenset()


@dataclass
class Revocations:
    """The in-memory floor. ``now`` is ``time.monotonic()`` throughout (never the wall clock:
    a clock step must not make an old poll look fresh)."""

    trust_s: float = 10.0
    clock: Callable[[], float] = field(default=time.monotonic, repr=False)
    _keys: dict[str, float] = field(default_factory=dict)  # key hash -> last seen
    _tokens: dict[str, float] = field(default_factory=dict)  # jti -> last seen
    _disabled: frozenset[str] = frozenset()  # tenants PostgreSQL says are disabled
    _unsettled: dict[str, float] = field(default_factory=dict)  # tenant -> event read at
    _fresh_at: float | None = None  # when the last successful poll started

    def _now(self) -> float:
        return self.clock()

    def trusted(self) -> bool:
        """May a cached record be believed at all? Only while the last poll is recent."""
        return self._fresh_at is not None and self._now() - self._fresh_at < self.trust_s

    def key_revoked(self, key_hash: str) -> bool:
        return key_hash in self._keys

    def token_revoked(self, jti: str) -> bool:
        return jti in self._tokens

    def tenant_disabled(self, tenant_id: str) -> bool:
        return tenant_id in self._disabled

    def tenant_settled(self, tenant_id: str) -> bool:
        """False while a change to the tenant was announced and no poll has read it since."""
        return tenant_id not in self._unsettled

    def believes_tenant(self, tenant_id: str, disabled: bool) -> bool:
        """May a cached tenant record saying ``disabled`` be believed? A refusal always may;
        "not disabled" only while the floor is fresh, no change to the tenant is unread and
        PostgreSQL did not say disabled lately. Otherwise the row is read (and decides, so an
        enable_tenant holds at once)."""
        if disabled:
            return True
        return self.trusted() and tenant_id not in self._unsettled and tenant_id not in self._disabled

    def learn_event(self, kind: str, name: str) -> None:
        """A control event from admin: ``name`` is a key hash, a jti or a tenant id."""
        now = self._now()
        if kind == "api_key.revoked":
            self._keys[name] = now
        elif kind == "access_token.revoked":
            self._tokens[name] = now
        elif kind == "tenant.updated":
            self._unsettled.setdefault(name, now)

    def learn_poll(self, started: float, snap: Snapshot) -> None:
        """A poll that started at ``started`` (monotonic) read ``snap``: revocations added,
        the disabled set replaced (an enabled tenant leaves it), the tenants announced before
        the poll started settled, and what was last seen RETAIN_S ago forgotten."""
        now = self._now()
        for key_hash in snap.key_hashes:
            self._keys[key_hash] = now
        for jti in snap.jtis:
            self._tokens[jti] = now
        self._disabled = snap.disabled_tenants
        self._unsettled = {t: at for t, at in self._unsettled.items() if at >= started}
        self._keys = {k: at for k, at in self._keys.items() if now - at < RETAIN_S}
        self._tokens = {j: at for j, at in self._tokens.items() if now - at < RETAIN_S}
        if self._fresh_at is None or started > self._fresh_at:
            self._fresh_at = started


async def poll_forever(floor: Revocations, read: Callable[[], Awaitable[Snapshot]], poll_s: float) -> None:
    """Read PostgreSQL every ``poll_s`` into ``floor`` (a supervised task). A failed poll is
    logged and tried again at the next tick; the floor stops being trusted on its own."""
    while True:
        started = time.monotonic()
        try:
            snap = await read()
        except Exception as exc:  # noqa: BLE001 - any failure: the floor ages, fail closed
            log.warning(
                "revocation poll failed (%s); cached credentials are read from PostgreSQL", type(exc).__name__
            )
        else:
            floor.learn_poll(started, snap)
        await asyncio.sleep(max(0.0, poll_s - (time.monotonic() - started)))


def reader(sessions: async_sessionmaker[AsyncSession]) -> Callable[[], Awaitable[Snapshot]]:
    """One poll: PostgreSQL's revocations of the last RETAIN_S (``gateway.repository``)."""

    async def read() -> Snapshot:
        async with sessions() as session:
            keys, jtis, tenants = await repo.recent_revocations(session, RETAIN_S)
        return Snapshot(frozenset(keys), frozenset(jtis), frozenset(tenants))

    return read

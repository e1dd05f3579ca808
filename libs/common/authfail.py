"""Failed authentication, limited per client address (docs/security.md, "Round 3").

Unknown API keys, bad JWTs and wrong operator tokens each count one failure for the client
address in a fixed one-minute window in Redis (shared by every instance). Past the limit the
address is answered ``429 rate_limited`` before any lookup, so a flood of random keys costs a
Redis GET each, not a PostgreSQL query. Known-unknown keys are also cached negatively by the
gateway (``-`` entries), so repeating one key costs no query either.

Atomic: a failure is counted by one Lua call that increments the window and sets its expiry
together, and the count it returns decides: the failure past the limit is itself answered 429,
so concurrent failures cannot all slip in between a read and a write. An IPv6 client is counted
by its /64 (one subscriber's allocation: counting each of its 2^64 addresses apart would give it
that many budgets).
"""

from __future__ import annotations

import time

from redis.asyncio import Redis

from common.clientaddr import client_key
from common.errors import ErrorCode, ServiceError

PREFIX = "sluice:authfail:"
WINDOW_S = 60
_COUNT = """
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
return n
"""


def counted_as(address: str | None) -> str:
    """The unit a failure is counted against (:func:`common.clientaddr.client_key`)."""
    return client_key(address)


class FailureLimiter:
    def __init__(self, redis: Redis, scope: str, limit_per_minute: int) -> None:
        self.redis = redis
        self.scope = scope
        self.limit = limit_per_minute
        self._count = redis.register_script(_COUNT)

    def _name(self, address: str | None, start: int) -> str:
        return f"{PREFIX}{self.scope}:{counted_as(address)}:{start}"

    def _refusal(self, now: float, start: int) -> ServiceError:
        retry = max(1, start + WINDOW_S - int(now))
        return ServiceError(
            ErrorCode.RATE_LIMITED,
            f"too many failed authentications from this address; retry after {retry} s",
            details={"reason": "authentication_failures", "limit": self.limit},
            headers={"Retry-After": str(retry)},
        )

    async def check(self, address: str | None) -> None:
        """429 when this address already failed ``limit`` times in the current window (a read:
        it only spares the lookup; :meth:`record` is what counts)."""
        now = time.time()
        start = int(now // WINDOW_S) * WINDOW_S
        count = await self.redis.get(self._name(address, start))
        if count is not None and int(count) >= self.limit:
            raise self._refusal(now, start)

    async def record(self, address: str | None) -> None:
        """Count one failure, atomically; the failure past the limit raises 429 itself."""
        now = time.time()
        start = int(now // WINDOW_S) * WINDOW_S
        count = int(await self._count(keys=[self._name(address, start)], args=[WINDOW_S + 1]))
        if count > self.limit:
            raise self._refusal(now, start)

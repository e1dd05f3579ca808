"""Failed authentication, limited per client address (contract 12.3; issue 13 item 6).

Unknown API keys, bad JWTs and wrong operator tokens each count one failure for the client
address in a fixed one-minute window in Redis (shared by every instance). Past the limit the
address is answered ``429 rate_limited`` before any lookup, so a flood of random keys costs a
Redis GET each, not a PostgreSQL query. Known-unknown keys are also cached negatively by the
gateway (``-`` entries), so repeating one key costs no query either.
"""

from __future__ import annotations

import time

from redis.asyncio import Redis

from common.errors import ErrorCode, ServiceError

PREFIX = "sluice:authfail:"
WINDOW_S = 60


class FailureLimiter:
    def __init__(self, redis: Redis, scope: str, limit_per_minute: int) -> None:
        self.redis = redis
        self.scope = scope
        self.limit = limit_per_minute

    def _name(self, address: str | None, start: int) -> str:
        return f"{PREFIX}{self.scope}:{address or 'unknown'}:{start}"

    async def check(self, address: str | None) -> None:
        """429 when this address already failed ``limit`` times in the current window."""
        now = time.time()
        start = int(now // WINDOW_S) * WINDOW_S
        count = await self.redis.get(self._name(address, start))
        if count is not None and int(count) >= self.limit:
            retry = max(1, start + WINDOW_S - int(now))
            raise ServiceError(
                ErrorCode.RATE_LIMITED,
                f"too many failed authentications from this address; retry after {retry} s",
                details={"reason": "authentication_failures", "limit": self.limit},
                headers={"Retry-After": str(retry)},
            )

    async def record(self, address: str | None) -> None:
        start = int(time.time() // WINDOW_S) * WINDOW_S
        name = self._name(address, start)
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.incr(name)
            pipe.expire(name, WINDOW_S + 1)
            await pipe.execute()

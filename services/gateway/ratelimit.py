"""Per tenant and mode, fixed one-minute windows in Redis, shared by all gateway instances.

Why not the ``limits`` package: its fixed-window strategy needs a second round trip to read
the window's remaining count and reset time that every response reports; one pipelined
INCR + EXPIRE gives both, and the health snapshot reads the same counter.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from redis.asyncio import Redis

from common.errors import ErrorCode, ServiceError


@dataclass(frozen=True, slots=True)
class Window:
    limit: int
    remaining: int
    reset: int  # unix seconds

    def headers(self) -> dict[str, str]:
        return {
            "X-RateLimit-Limit": str(self.limit),
            "X-RateLimit-Remaining": str(self.remaining),
            "X-RateLimit-Reset": str(self.reset),
        }


class RateLimiter:
    def __init__(self, redis: Redis) -> None:
        self.redis = redis

    async def hit(self, tenant_id: str, mode: str, limit: int) -> Window:
        now = time.time()
        start = int(now // 60) * 60
        key = f"sluice:rl:{tenant_id}:{mode}:{start}"
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.incr(key)
            pipe.expire(key, 61)
            count, _ = await pipe.execute()
        window = Window(limit=limit, remaining=max(0, limit - int(count)), reset=start + 60)
        if int(count) > limit:
            retry = max(1, window.reset - int(now))
            raise ServiceError(
                ErrorCode.RATE_LIMITED,
                f"rate limit of {limit} requests per minute reached; retry after {retry} s",
                details={"limit": limit, "reset_at": window.reset},
                headers={**window.headers(), "Retry-After": str(retry)},
            )
        return window

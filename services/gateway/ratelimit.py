"""Per tenant and mode, fixed one-minute windows in Redis, shared by all gateway instances.

Why not the ``limits`` package: its fixed-window strategy needs a second round trip to read
the window's remaining count and reset time that every response reports; one INCR gives
both, and the health snapshot reads the same counter. On the hot path the INCR is folded
into the API-key lookup (``gateway.auth``), so a request costs one round trip for both.
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


PREFIX = "sluice:rl:"
WINDOW_TTL_S = 61


def window_start(now: float) -> int:
    return int(now // 60) * 60


def window_name(tenant_id: str, mode: str, start: int) -> str:
    return f"{PREFIX}{tenant_id}:{mode}:{start}"


class RateLimiter:
    def __init__(self, redis: Redis) -> None:
        self.redis = redis

    async def hit(self, tenant_id: str, mode: str, limit: int) -> Window:
        """Count one request and check it (the path for JWTs and cold caches)."""
        start = window_start(time.time())
        key = window_name(tenant_id, mode, start)
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.incr(key)
            pipe.expire(key, WINDOW_TTL_S)
            count, _ = await pipe.execute()
        return self.check(limit, int(count), start)

    async def give_back(self, tenant_id: str, mode: str, start: int) -> None:
        """Uncount a request that was counted (with the key lookup) and then refused before
        the limit applies, so only requests that pass authorization count."""
        await self.redis.decr(window_name(tenant_id, mode, start))

    @staticmethod
    def check(limit: int, count: int, start: int) -> Window:
        """The window after ``count`` requests; ``rate_limited`` (429) past the limit."""
        now = time.time()
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

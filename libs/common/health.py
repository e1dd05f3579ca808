"""Readiness, and ``GET /healthz`` / ``GET /readyz`` for the consumer services (plain ASGI).

``/readyz`` is 503 while a store or the broker does not answer its check, or while a part of
the service reports itself unhealthy through :class:`Readiness`: a consumer waiting out a
transient fault, a background task that crashed and waits to be restarted.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger(__name__)

Check = Callable[[], Awaitable[Any]]


class Readiness:
    """Parts of a process that report their own health (consumers, background tasks)."""

    def __init__(self) -> None:
        self._problems: dict[str, str] = {}

    def fail(self, component: str, why: str) -> None:
        self._problems[component] = why

    def ok(self, component: str) -> None:
        self._problems.pop(component, None)

    def problems(self) -> dict[str, str]:
        return dict(self._problems)


async def run_checks(checks: dict[str, Check], timeout: float = 2.0) -> tuple[bool, dict[str, str]]:
    async def one(fn: Check) -> str:
        try:
            await asyncio.wait_for(fn(), timeout)
            return "ok"
        except Exception as exc:  # noqa: BLE001 - reported, not raised
            return f"unavailable: {type(exc).__name__}"

    names = list(checks)
    results = await asyncio.gather(*(one(checks[n]) for n in names))
    status = dict(zip(names, results, strict=True))
    return all(v == "ok" for v in results), status


def _json_app(body_fn: Callable[[], Awaitable[tuple[int, dict[str, Any]]]]) -> Any:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        status, body = await body_fn()
        raw = json.dumps(body).encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": raw})

    return app


#: Checks of a cache: reported, never a reason to take the process out of service (a gateway
#: without Valkey answers 503 with Retry-After itself, in the envelope, which a partner's client
#: retries; an empty endpoint list would make the ingress answer instead, without either).
SOFT_CHECKS = frozenset({"redis"})


class Blips:
    """When each failing check began to fail: a store check takes the process out of service
    only once it has failed for ``grace_s`` without a pass (a PostgreSQL failover or a broker's
    leader election of a few seconds is waited out by the calls' own bounds and retries, and a
    readiness that flapped with it would empty the ingress's endpoints for nothing)."""

    def __init__(self, grace_s: float) -> None:
        self.grace_s = grace_s
        self._since: dict[str, float] = {}

    def lasting(self, failing: set[str], now: float) -> set[str]:
        """Of ``failing``, those failing for ``grace_s`` or longer; forgets those that pass."""
        for name in set(self._since) - failing:
            del self._since[name]
        for name in failing:
            self._since.setdefault(name, now)
        return {n for n in failing if now - self._since[n] >= self.grace_s}


async def readiness_report(
    service: str,
    checks: dict[str, Check],
    readiness: Readiness | None = None,
    blips: Blips | None = None,
) -> tuple[int, dict[str, Any]]:
    """``/readyz``'s status and body: every check, and every part reporting a problem. 503
    for a problem a part reports, or a store check (not a cache's, SOFT_CHECKS) failing past
    its grace (``blips``; none: at once); 200 ``degraded`` while something else fails."""
    _, status = await run_checks(checks)
    problems = readiness.problems() if readiness is not None else {}
    failing = {name for name, v in status.items() if v != "ok" and name not in SOFT_CHECKS}
    lasting = failing if blips is None else blips.lasting(failing, asyncio.get_running_loop().time())
    status.update(problems)
    down = bool(lasting or problems)
    state = "unavailable" if down else ("degraded" if any(v != "ok" for v in status.values()) else "ready")
    return (503 if down else 200), {"status": state, "service": service, "checks": status}


def health_routes(
    service: str,
    checks: Callable[[], dict[str, Check]],
    stats: Callable[[], dict[str, Any]] | None = None,
    readiness: Readiness | None = None,
    blips: Blips | None = None,
) -> list[tuple[str, Any]]:
    async def live() -> tuple[int, dict[str, Any]]:
        return 200, {"status": "ok", "service": service}

    async def ready() -> tuple[int, dict[str, Any]]:
        code, body = await readiness_report(service, checks(), readiness, blips)
        if stats is not None:
            body["stats"] = stats()
        return code, body

    return [("/healthz", _json_app(live)), ("/readyz", _json_app(ready))]


def broker_check(broker: Any) -> Check:
    async def check() -> None:
        if not await broker.ping(2.0):
            raise ConnectionError("kafka unreachable")

    return check

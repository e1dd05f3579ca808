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


async def readiness_report(
    service: str, checks: dict[str, Check], readiness: Readiness | None = None
) -> tuple[int, dict[str, Any]]:
    """``/readyz``'s status and body: every check, and every part reporting a problem."""
    ok, status = await run_checks(checks)
    problems = readiness.problems() if readiness is not None else {}
    status.update(problems)
    ok = ok and not problems
    return (200 if ok else 503), {
        "status": "ready" if ok else "unavailable",
        "service": service,
        "checks": status,
    }


def health_routes(
    service: str,
    checks: Callable[[], dict[str, Check]],
    stats: Callable[[], dict[str, Any]] | None = None,
    readiness: Readiness | None = None,
) -> list[tuple[str, Any]]:
    async def live() -> tuple[int, dict[str, Any]]:
        return 200, {"status": "ok", "service": service}

    async def ready() -> tuple[int, dict[str, Any]]:
        code, body = await readiness_report(service, checks(), readiness)
        if stats is not None:
            body["stats"] = stats()
        return code, body

    return [("/healthz", _json_app(live)), ("/readyz", _json_app(ready))]


def broker_check(broker: Any) -> Check:
    async def check() -> None:
        if not await broker.ping(2.0):
            raise ConnectionError("kafka unreachable")

    return check

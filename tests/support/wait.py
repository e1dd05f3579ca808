"""One way for a test to wait for something the suite does asynchronously."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


def eventually(probe: Callable[[], T], *, timeout: float = 20, interval: float = 0.2, what: str = "") -> T:
    """Call ``probe`` until it returns a truthy value and return that value. An
    ``AssertionError`` raised by the probe means "not yet"; at the deadline the probe's last
    ``AssertionError`` is raised again, or one naming ``what``."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return _truthy(probe(), timeout, what or probe)
        except AssertionError as exc:
            _raise_if_past(deadline, exc)
        time.sleep(interval)


async def eventually_async(
    probe: Callable[[], Awaitable[T]], *, timeout: float = 20, interval: float = 0.2, what: str = ""
) -> T:
    """:func:`eventually` for a coroutine probe."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return _truthy(await probe(), timeout, what or probe)
        except AssertionError as exc:
            _raise_if_past(deadline, exc)
        await asyncio.sleep(interval)


def _truthy(value: T, timeout: float, what: object) -> T:
    """``value`` when it is truthy; else "not yet", as an ``AssertionError`` naming ``what``."""
    if value:
        return value
    raise AssertionError(f"not within {timeout}s: {what!r}")


def _raise_if_past(deadline: float, failure: AssertionError) -> None:
    if time.monotonic() >= deadline:
        raise failure

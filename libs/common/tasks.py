"""Supervised background tasks: one way to run the loops every service has (reply reader,
outbox relay, sandbox simulator, delivery worker, retention sweep).

A task that crashes is logged, reported by ``/readyz`` (through :class:`Readiness`) and
restarted with jittered exponential backoff (tenacity); shutdown cancels every task and
awaits it, the same way in every service. A task that returns on its own is done. The backoff
counts consecutive quick crashes only: a run that lasted ``healthy_s`` starts the count again,
so a task that crashes once after an hour is back in 0.2 s, not in the 30 s its crashes of
the morning had earned it (tenacity's attempt number never resets by itself).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception_type,
    stop_never,
    wait_exponential_jitter,
)

from common.health import Readiness
from common.metrics import TASK_RESTARTS

log = logging.getLogger(__name__)


class Supervisor:
    def __init__(self, readiness: Readiness, *, max_backoff_s: float = 30.0, healthy_s: float = 60.0) -> None:
        self.readiness = readiness
        self.max_backoff_s = max_backoff_s
        self.healthy_s = healthy_s
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self.restarts: dict[str, int] = {}

    def start(self, name: str, run: Callable[[], Awaitable[None]]) -> None:
        """Run ``run()`` under supervision; ``run`` is called again after each crash."""
        self.restarts[name] = 0
        self.tasks[name] = asyncio.create_task(self._supervise(name, run), name=name)

    async def _supervise(self, name: str, run: Callable[[], Awaitable[None]]) -> None:
        component = f"task {name}"

        def crashed(state: RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome else None
            self.restarts[name] += 1
            TASK_RESTARTS.labels(name).inc()
            self.readiness.fail(component, f"crashed ({type(exc).__name__}), restarting")
            log.error("background task %s crashed; restarting", name, exc_info=exc)

        backoff = wait_exponential_jitter(multiplier=0.2, max=self.max_backoff_s, jitter=0.2)
        started, streak = time.monotonic(), 0

        def wait(state: RetryCallState) -> float:
            """Backoff by the crashes since the task last ran ``healthy_s`` without one."""
            nonlocal streak
            streak = 1 if time.monotonic() - started >= self.healthy_s else streak + 1
            state.attempt_number = streak  # tenacity's count restarts with the streak
            return backoff(state)

        async for attempt in AsyncRetrying(
            retry=retry_if_exception_type(Exception), wait=wait, stop=stop_never, before_sleep=crashed
        ):
            with attempt:
                self.readiness.ok(component)
                started = time.monotonic()
                await run()

    async def stop(self, timeout_s: float = 5.0) -> None:
        """Cancel every task and wait for each to finish (at most ``timeout_s``)."""
        for task in self.tasks.values():
            task.cancel()
        if self.tasks:
            await asyncio.wait(self.tasks.values(), timeout=timeout_s)
        self.tasks.clear()

    def dead(self) -> list[str]:
        """Tasks that ended with an exception the supervisor did not handle (none expected)."""
        return [n for n, t in self.tasks.items() if t.done() and not t.cancelled() and t.exception()]

"""FastStream's batch poll without its idle sleep (installed by ``common.broker``).

FastStream 0.7's ``BatchSubscriber.get_msg`` calls aiokafka's ``getmany(timeout_ms=
batch_timeout_ms)`` and, when that returns nothing, sleeps ``batch_timeout_ms`` more. aiokafka's
``getmany`` already returns as soon as any record has been fetched, so the wait costs no
latency; the sleep after it does: a record arriving during it waits. That is why the request
path ran with a 5 ms timeout, and why an idle stack polled each request-path subscriber about
100 times a second (the largest part of an idle stack's Python CPU, docs/performance).

Here the poll waits up to ``batch_timeout_ms`` (500 on the request path now) for the first
records and returns them at once; only a poll that came back empty *early* (no assignment
during a rebalance, a consumer being stopped) sleeps briefly, so it can never spin.
The replaced method is checked at import: another FastStream version fails loudly here.
"""

from __future__ import annotations

import time
from itertools import chain
from typing import Any

import anyio
from faststream.kafka.subscriber.usecase import BatchSubscriber

#: A poll that came back empty before this share of its timeout sleeps (anti-spin), seconds.
EARLY_EMPTY_SLEEP_S = 0.01


async def get_batch(self: Any, consumer: Any) -> tuple[Any, ...]:
    """The subscriber's next batch: what ``getmany`` returns as soon as records are fetched."""
    began = time.monotonic()
    messages = await consumer.getmany(timeout_ms=self.batch_timeout_ms, max_records=self.max_records)
    if not messages:
        if time.monotonic() - began < self.batch_timeout_ms / 2000:
            await anyio.sleep(EARLY_EMPTY_SLEEP_S)
        return ()
    return tuple(chain(*messages.values()))


def install() -> None:
    if not hasattr(BatchSubscriber, "get_msg") or not hasattr(BatchSubscriber, "__slots__"):
        raise RuntimeError("FastStream's BatchSubscriber changed: review common.batchpoll")
    if "batch_timeout_ms" not in BatchSubscriber.__slots__:
        raise RuntimeError("FastStream's BatchSubscriber has no batch_timeout_ms: review common.batchpoll")
    # FastStream declares no hook for the poll (upstream gap): the method itself is replaced
    BatchSubscriber.get_msg = get_batch  # type: ignore[method-assign,assignment]  # upstream: no poll hook

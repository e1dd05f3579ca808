"""common.batchpoll: a batch poll returns the first records at once, never sleeps after a poll
that waited out its timeout, and sleeps briefly after one that came back empty early (so a
subscriber without partitions cannot spin)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from faststream.kafka.subscriber.usecase import BatchSubscriber

import common.broker  # noqa: F401 - installs the poll
from common import batchpoll

pytestmark = pytest.mark.unit


class Sub:
    batch_timeout_ms = 200
    max_records = 10


class Consumer:
    def __init__(self, records: dict[str, list[int]], wait_s: float) -> None:
        self.records, self.wait_s, self.calls = records, wait_s, 0

    async def getmany(self, timeout_ms: int, max_records: int) -> dict[str, list[int]]:
        self.calls += 1
        await asyncio.sleep(self.wait_s)
        return self.records


def test_the_subscriber_uses_the_poll() -> None:
    assert BatchSubscriber.get_msg is batchpoll.get_batch


async def test_records_come_back_at_once_and_flattened(monkeypatch: Any) -> None:
    slept: list[float] = []

    async def sleep(s: float) -> None:
        slept.append(s)

    monkeypatch.setattr(batchpoll.anyio, "sleep", sleep)
    consumer = Consumer({"a": [1, 2], "b": [3]}, 0.0)
    assert await batchpoll.get_batch(Sub(), consumer) == (1, 2, 3)
    assert (consumer.calls, slept) == (1, [])  # one poll, nothing waited after the records


async def test_a_poll_that_waited_out_its_timeout_does_not_sleep_again(monkeypatch: Any) -> None:
    slept: list[float] = []

    async def sleep(s: float) -> None:
        slept.append(s)

    monkeypatch.setattr(batchpoll.anyio, "sleep", sleep)
    assert await batchpoll.get_batch(Sub(), Consumer({}, Sub.batch_timeout_ms / 1000)) == ()
    assert slept == []
    assert await batchpoll.get_batch(Sub(), Consumer({}, 0.0)) == ()  # empty at once: no spin
    assert slept == [batchpoll.EARLY_EMPTY_SLEEP_S]

"""The simulated broker of the deterministic simulation: every published record lands in an
in-memory queue per topic, and the simulation decides when, in what order and how often each
is delivered. Nothing here is random by itself; every choice comes from the seed's generator.

The services publish through ``common.tracing.publish``, which hands records to the broker's
aiokafka producer; :class:`SimBroker` offers the same attribute path to a producer that
appends to :class:`Net` instead (and may append a record twice: a producer retry after a lost
acknowledgement, which Kafka without idempotence delivers twice).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from common.failpoints import hit


@dataclass
class Msg:
    """A record as the consumer runtime reads it (``common.consume.Record``)."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: Sequence[tuple[str, bytes]] = ()


@dataclass
class Net:
    rng: random.Random
    duplicate_share: float = 0.0  # share of publishes appended twice
    queues: dict[str, list[Msg]] = field(default_factory=dict)
    history: dict[str, list[Msg]] = field(default_factory=dict)  # everything ever published
    offset: int = 0

    def put(self, topic: str, value: bytes, key: bytes | None, headers: list[tuple[str, bytes]]) -> None:
        copies = 2 if self.duplicate_share and self.rng.random() < self.duplicate_share else 1
        for _ in range(copies):
            self.offset += 1
            msg = Msg(topic, 0, self.offset, key, value, list(headers))
            self.queues.setdefault(topic, []).append(msg)
            self.history.setdefault(topic, []).append(msg)

    def pending(self, topic: str) -> list[Msg]:
        return self.queues.setdefault(topic, [])

    def take(self, topic: str, most: int, shuffle: bool) -> list[Msg]:
        """Up to ``most`` pending records of ``topic``: the oldest ``most``, or (``shuffle``) a
        random number of them, any of them, in any order."""
        queue = self.pending(topic)
        if not queue:
            return []
        if not shuffle:
            return queue[:most]
        return self.rng.sample(queue, self.rng.randint(1, min(most, len(queue))))

    def commit(self, topic: str, msgs: list[Msg], keep_share: float = 0.0) -> None:
        """The consumer committed ``msgs``; each stays pending with ``keep_share`` (a commit lost
        before a rebalance: the record is delivered again)."""
        queue = self.pending(topic)
        for m in msgs:
            if keep_share and self.rng.random() < keep_share:
                continue
            if m in queue:
                queue.remove(m)


class SimProducer:
    """aiokafka's ``send`` as ``common.tracing.publish`` calls it."""

    def __init__(self, net: Net) -> None:
        self.net = net

    async def send(
        self,
        topic: str,
        value: bytes,
        key: bytes | None = None,
        partition: int | None = None,
        headers: list[tuple[str, bytes]] | None = None,
    ) -> asyncio.Future[None]:
        hit("sim.publish")  # a crash just before the record leaves the process
        self.net.put(topic, value, key, headers or [])
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        done.set_result(None)
        return done


def sim_broker(net: Net) -> Any:
    """An object with the attribute path ``common.tracing._producer`` walks to aiokafka."""
    producer = SimProducer(net)
    return SimpleNamespace(
        config=SimpleNamespace(producer=SimpleNamespace(_producer=SimpleNamespace(producer=producer)))
    )

"""The in-memory stand-in for Kafka the in-process tier runs on (docs/testing/index.md).

Every record the services publish goes through one call, ``common.tracing.publish``, which hands
it to the broker's aiokafka producer (``common.tracing._producer``); every consumer is a
:class:`common.consume.BatchProcessor` subscribed by ``common.broker.subscribe``; the gateway and
admin read their replies with :class:`common.rpc.RpcClient`, the gateway its control events
with :class:`gateway.control.ControlReader` and the ledger its journal anchors with
``ledger.anchors.Anchors._read``; a test that writes a record itself (``Broker.publish``, as
another producer would) writes it to the bus. :func:`patched` swaps exactly those Kafka ends for
:class:`Bus`, so the records the consumers decide are the bytes they would read from Kafka, the
replies resolve the real ``RpcClient``'s waiters, and no product code changes.

A subscriber is one consumer group: it gets every record of its topic, in order, in batches, on
the event loop of the service that subscribed (each service runs on a loop of its own, as each
runs in a process of its own on the stack). A batch that raises is logged and not retried: the
BatchProcessor already retried and dead-lettered what it could not decide.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec
import pytest
from aiokafka import TopicPartition

from common.contracts import Result, decode

log = logging.getLogger(__name__)

Process = Callable[[Sequence[Any]], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Record:
    """What a consumer reads of a Kafka record (common.consume.Record)."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: Sequence[tuple[str, bytes]]
    timestamp: int = 0


@dataclass
class Subscriber:
    topic: str
    group: str
    process: Process
    loop: asyncio.AbstractEventLoop
    queue: asyncio.Queue[Record] = field(init=False)
    task: asyncio.Task[None] | None = None

    def __post_init__(self) -> None:
        self.queue = asyncio.Queue()  # made on its loop: subscribe() runs there

    def deliver(self, rec: Record) -> None:
        if not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self.queue.put_nowait, rec)

    async def pump(self) -> None:
        while True:
            batch = [await self.queue.get()]
            while not self.queue.empty() and len(batch) < 500:
                batch.append(self.queue.get_nowait())
            try:
                await self.process(batch)
            except Exception:  # noqa: BLE001 - the processor retried and dead-lettered already
                log.exception(
                    "in-memory bus: %s (%s) failed a batch of %d", self.topic, self.group, len(batch)
                )


_BUSES: dict[str, Bus] = {}


def bus_at(bootstrap: str) -> Bus | None:
    """The bus that stands at ``bootstrap`` (a stack's ``SLUICE_KAFKA_BOOTSTRAP``), if any: the
    tests' own Kafka helpers (tests/support) read and write it instead of a broker."""
    return _BUSES.get(bootstrap)


class Bus:
    """Topics in memory: an offset per topic and partition, every record kept (for taps).
    ``address`` stands where a broker's bootstrap address does (never dialled)."""

    def __init__(self) -> None:
        self.address = f"bus-{id(self):x}.in-memory.invalid:9092"
        _BUSES[self.address] = self
        self._lock = threading.Lock()
        self._subscribers: dict[str, list[Subscriber]] = {}
        self._offsets: dict[tuple[str, int], int] = {}
        self.records: list[Record] = []

    def subscribe(self, topic: str, group: str, process: Process) -> Subscriber:
        """``process`` reads ``topic`` from now on, on the running loop (the subscriber's)."""
        sub = Subscriber(topic, group, process, asyncio.get_running_loop())
        sub.task = sub.loop.create_task(sub.pump(), name=f"bus-{topic}-{group}")
        with self._lock:
            self._subscribers.setdefault(topic, []).append(sub)
        return sub

    def unsubscribe(self, sub: Subscriber) -> None:
        with self._lock:
            subs = self._subscribers.get(sub.topic, [])
            if sub in subs:
                subs.remove(sub)
        if sub.task is not None and not sub.loop.is_closed():
            sub.loop.call_soon_threadsafe(sub.task.cancel)

    def put(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        partition: int | None = None,
        headers: Sequence[tuple[str, bytes]] = (),
    ) -> Record:
        with self._lock:
            part = partition or 0
            offset = self._offsets.get((topic, part), 0)
            self._offsets[(topic, part)] = offset + 1
            rec = Record(topic, part, offset, key, value, list(headers or ()))
            self.records.append(rec)
            subs = list(self._subscribers.get(topic, ()))
        for sub in subs:
            sub.deliver(rec)
        return rec

    def producer(self) -> Producer:
        return Producer(self)

    def since(self, mark: int, topics: set[str] | None = None) -> list[Record]:
        """The records published after ``mark`` (``len(bus.records)`` taken earlier)."""
        with self._lock:
            out = self.records[mark:]
        return [r for r in out if topics is None or r.topic in topics]


class Producer:
    """aiokafka's producer as ``common.tracing.publish`` uses it: ``await (await send(...))``."""

    def __init__(self, bus: Bus) -> None:
        self.bus = bus

    async def send(
        self,
        topic: str,
        value: bytes | None = None,
        key: bytes | None = None,
        partition: int | None = None,
        headers: Sequence[tuple[str, bytes]] | None = None,
        **_: Any,
    ) -> asyncio.Future[None]:
        self.bus.put(topic, value, key, partition, headers or ())
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        done.set_result(None)
        return done

    async def send_and_wait(self, topic: str, value: bytes | None = None, **kwargs: Any) -> None:
        await self.send(topic, value, **kwargs)


@contextlib.contextmanager
def patched(bus: Bus) -> Iterator[None]:
    """Route every Kafka end of the services through ``bus`` for as long as the block runs."""
    import admin.app
    import common.broker
    import common.rpc
    import common.service
    import common.tracing
    import compliance.app
    import gateway.app
    import gateway.control
    import ledger.anchors
    import ledger.app
    import webhooks.app

    producer = bus.producer()

    def subscribe(
        broker: Any,
        settings: Any,
        topic: str,
        group_id: str,
        process: Process,
        *,
        background: bool = False,
        linger: bool = False,
    ) -> None:
        # common.broker.subscribe's signature: how a real broker fetches (background, linger)
        # means nothing to the in-memory bus, which hands each batch over at once
        bus.subscribe(topic, group_id, process)

    async def nothing(*_: Any, **__: Any) -> None:
        return None

    async def broker_start(self: Any) -> None:
        self.running = True

    async def broker_publish(
        self: Any,
        message: bytes,
        topic: str = "",
        *,
        key: bytes | None = None,
        partition: int | None = None,
        headers: dict[str, str] | None = None,
        **_: Any,
    ) -> None:
        """A test's own ``broker.publish`` (a record as another producer would write it)."""
        bus.put(topic, message, key, partition, [(k, v.encode()) for k, v in (headers or {}).items()])

    async def rpc_start(self: common.rpc.RpcClient, supervisor: Any = None, timeout_s: float = 30.0) -> None:
        async def replies(records: Sequence[Any]) -> None:
            results = []
            for rec in records:
                try:
                    results.append(decode(rec.value or b"", Result))
                except (msgspec.DecodeError, msgspec.ValidationError):
                    log.error("undecodable reply on %s", self.reply_topic)
            if results:
                await self._resolve(results)

        self._bus_subscriber = bus.subscribe(self.reply_topic, "", replies)  # type: ignore[attr-defined]
        self._reading.set()

    async def rpc_drop(self: common.rpc.RpcClient) -> None:
        sub = getattr(self, "_bus_subscriber", None)
        if sub is not None:
            bus.unsubscribe(sub)

    async def control_run(self: gateway.control.ControlReader) -> None:
        sub = bus.subscribe(self.topic, "", self.process)
        try:
            await asyncio.Event().wait()  # a supervised task: runs until the service stops
        finally:
            bus.unsubscribe(sub)

    async def anchors_read(
        self: ledger.anchors.Anchors, found: Any, positions: dict[Any, int], own: bool = False
    ) -> None:
        """The anchors topic to its end, as ``_drain`` reads it from Kafka (one partition here)."""
        tp = TopicPartition(self.topic, 0)
        start = positions.get(tp, 0)
        for rec in (r for r in bus.since(0, {self.topic}) if r.offset >= start):
            found.add(rec.value or b"", self.keys, {"partition": rec.partition, "offset": rec.offset})
            positions[tp] = rec.offset + 1

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(common.tracing, "_producer", lambda broker: producer)
        mp.setattr(common.broker.Broker, "start", broker_start)
        mp.setattr(common.broker.Broker, "stop", nothing)
        mp.setattr(common.broker.Broker, "publish", broker_publish)
        for module in (gateway.app, admin.app, common.service):
            mp.setattr(module, "ensure_shared_topics", nothing)
        for module in (admin.app, compliance.app, ledger.app, webhooks.app):
            mp.setattr(module, "subscribe", subscribe)
        mp.setattr(common.rpc.RpcClient, "start", rpc_start)
        mp.setattr(common.rpc.RpcClient, "drop_reply_topic", rpc_drop)
        mp.setattr(gateway.control.ControlReader, "run", control_run)
        mp.setattr(ledger.anchors.Anchors, "_read", anchors_read)
        yield

"""Request/reply over Kafka for the HTTP services (gateway, admin).

Each HTTP instance owns one-partition reply topics ``<prefix>.replies.<instance_id>.<epoch>``
and reads them by manual assignment (no consumer group, so no join delay). Commands carry
``ctx.reply_to``; consumers publish the :class:`Result` there on partition 0. A waiting
request is resolved by ``command_id``; a result that arrives after its waiter gave up is
handed to ``on_results`` too (one call per fetched batch) so the outcome is still recorded.

One reply topic per life of an instance: the topics of an earlier life of the same instance id
are deleted at start (nobody reads them), and the broker's retention bounds the live one.
Rounds 1-3 rotated reply topics every 1,000 replies because Tansu's memory engine made each
fetch cost more as a partition's history grew; Apache Kafka finds an offset through its index
whatever the history, so the rotation went with Tansu.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from collections.abc import Awaitable, Callable

import msgspec
from aiokafka import AIOKafkaConsumer, TopicPartition
from faststream.kafka import KafkaBroker

from common import kafka, replies
from common.broker import ensure_topics
from common.contracts import Envelope, Result, decode, encode
from common.failpoints import failpoint
from common.health import Readiness
from common.settings import Settings
from common.tasks import Supervisor
from common.topics import Topics
from common.tracing import publish

log = logging.getLogger(__name__)


def instance_id(settings: Settings, service: str) -> str:
    return settings.instance_id or f"{service}-{socket.gethostname()}-{os.getpid()}"


class RpcClient:
    """Publishes commands and resolves their results from this instance's reply topic.

    The reply reader runs under the process's :class:`~common.tasks.Supervisor`: if it dies it
    is restarted (resuming after the last reply it read) and ``/readyz`` says so meanwhile.
    """

    def __init__(
        self,
        broker: KafkaBroker,
        settings: Settings,
        service: str,
        on_results: Callable[[list[Result]], Awaitable[None]] | None = None,
        *,
        background: bool = False,
    ) -> None:
        self.broker = broker
        self.settings = settings
        self.topics = Topics(settings.topic_prefix)
        self.reply_base = self.topics.replies(instance_id(settings, service))
        self.reply_topic = f"{self.reply_base}.{time.time_ns() // 1_000_000}"  # where new commands point
        self.on_results = on_results
        # Operator tools (admin) are not on a partner's request path: poll for replies less often.
        self.fetch_max_wait_ms = (
            settings.kafka_background_fetch_max_wait_ms if background else settings.kafka_fetch_max_wait_ms
        )
        self._waiters: dict[str, list[asyncio.Future[Result]]] = {}
        self._next_offset: int | None = None  # where a restarted reader resumes
        self._reading = asyncio.Event()
        self._own: Supervisor | None = None

    async def start(self, supervisor: Supervisor | None = None, timeout_s: float = 30.0) -> None:
        """Create the reply topic and start the reader under ``supervisor`` (the process's, or
        one of its own for a standalone client); returns once it reads."""
        await self._drop_stale_topics()
        await ensure_topics(self.settings, [self.reply_topic], partitions=1)
        if supervisor is None:
            supervisor = self._own = Supervisor(Readiness())
        supervisor.start("rpc-replies", self.run)
        await asyncio.wait_for(self._reading.wait(), timeout_s)

    async def stop(self) -> None:
        """Stop a standalone client's reader (a process's supervisor stops its own)."""
        if self._own is not None:
            await self._own.stop()

    async def drop_reply_topic(self) -> None:
        """Delete this life's reply topic, once the process has stopped serving: nobody will
        read it again. An instance's next life deletes what a crash left of its own id's at
        start (``start``); this is the case where the next life has another id (a pod's name,
        on Kubernetes, is new each life), which otherwise left one topic behind per life."""
        await self._delete_topics([self.reply_topic])

    async def run(self) -> None:
        consumer = AIOKafkaConsumer(
            **kafka.client_args(self.settings),
            enable_auto_commit=False,
            auto_offset_reset="latest",
            fetch_max_wait_ms=self.fetch_max_wait_ms,
            request_timeout_ms=self.settings.kafka_request_timeout_ms,
            group_id=None,
        )
        await consumer.start()
        try:
            tp = TopicPartition(self.reply_topic, 0)
            consumer.assign([tp])
            if self._next_offset is not None:  # restarted: read what arrived while down
                consumer.seek(tp, self._next_offset)
            else:
                await consumer.seek_to_end(tp)
                self._next_offset = await consumer.position(tp)
            self._reading.set()
            while True:
                batches = await consumer.getmany(timeout_ms=1000, max_records=500)
                results: list[Result] = []
                for records in batches.values():
                    for rec in records:
                        self._next_offset = rec.offset + 1
                        try:
                            results.append(decode(rec.value or b"", Result))
                        except (msgspec.DecodeError, msgspec.ValidationError):
                            log.error("undecodable reply on %s", self.reply_topic)
                if results:
                    await self._resolve(results)
        finally:
            await consumer.stop()

    async def _delete_topics(self, names: list[str]) -> None:
        args = kafka.client_args(self.settings)
        args["request_timeout_ms"] = self.settings.kafka_request_timeout_ms
        try:
            async with kafka.admin_client(**args) as admin:
                await admin.delete_topics(names)
        except Exception:  # noqa: BLE001 - a topic left behind costs space, not correctness
            log.warning("could not delete reply topics %s", names, exc_info=True)

    async def _drop_stale_topics(self) -> None:
        """Reply topics of this instance id left by an earlier life of it: nobody reads them."""
        async with kafka.admin_client(**kafka.client_args(self.settings)) as admin:
            found = await kafka.admin_retry(admin.list_topics)  # a broker may be down
        stale = [t for t in found if t.startswith(self.reply_base + ".")]
        if stale:
            await self._delete_topics(stale)

    async def _resolve(self, results: list[Result]) -> None:
        """Record the batch (one call, e.g. one Redis pipeline), then wake the waiters."""
        if self.on_results is not None:
            try:
                await self.on_results(results)
            except Exception:  # noqa: BLE001 - still resolve the waiters
                log.exception("recording %d results failed", len(results))
        for result in results:
            for fut in self._waiters.pop(result.command_id, ()):
                if not fut.done():
                    fut.set_result(result)

    async def send(self, topic: str, command: Envelope, key: str | None = None) -> None:
        await publish(
            self.broker,
            encode(command),
            topic=topic,
            key=key.encode() if key else None,
            request_id=command.ctx.request_id,
        )

    async def call(
        self, topic: str, command: Envelope, key: str | None = None, timeout: float | None = None
    ) -> Result:
        """Publish and wait for the result; raises ``TimeoutError`` when none arrives in time."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Result] = loop.create_future()
        waiters = self._waiters.setdefault(command.command_id, [])
        waiters.append(fut)
        try:
            async with asyncio.timeout(self.settings.kafka_publish_timeout_s):
                await self.send(topic, command, key)
            await failpoint("rpc.after_send")  # a caller dying with its command in flight
            return await asyncio.wait_for(fut, timeout or self.settings.gateway_timeout_s)
        finally:
            if fut in waiters:
                waiters.remove(fut)
            if not waiters and self._waiters.get(command.command_id) is waiters:
                del self._waiters[command.command_id]


async def reply(
    broker: KafkaBroker, reply_to: str | None, result: Result, *, service: str, prefix: str
) -> None:
    """Publish a result to a reply topic (partition 0); a no-op without a reply address, or
    with one that is not a reply topic of ``prefix`` (``common.replies``: counted)."""
    topic = replies.address(service, prefix, reply_to)
    if topic is not None:
        await publish(broker, encode(result), topic=topic, partition=0, request_id=result.request_id)

"""Kafka wiring: the broker, the one way to subscribe a consumer, topics, and dead letters.

:func:`subscribe` is how every consumer of the suite is built: a FastStream batch subscriber
whose handler hands the raw records to a :class:`common.consume.BatchProcessor`. Offsets are
committed only after the handler returned, that is after the work is durable or dead-lettered,
and at most every ``SLUICE_KAFKA_COMMIT_INTERVAL_MS`` (2000): :class:`Commits` commits the
offsets of processed records only, explicitly, so a commit never covers a record still being
handled. A handler that raises (or is cancelled at shutdown) rewinds its partitions to the
batch's first records (``AckPolicy.MANUAL`` plus FastStream's ``nack``; ``AckPolicy.ACK``
would commit even on error). A crash loses at most the last interval's commits: those records
are delivered again, and every consumer's inbox makes that harmless. A commit per batch was
one broker round trip per batch for every group (3 % of a consumer's CPU in the profile, and
an OffsetCommit for Tansu to store each time).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

import msgspec
from aiokafka import ConsumerRebalanceListener, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import KafkaError, TopicAlreadyExistsError
from faststream import AckPolicy, BaseMiddleware
from faststream.kafka import KafkaBroker
from faststream.kafka.opentelemetry import KafkaTelemetryMiddleware
from faststream.kafka.prometheus import KafkaPrometheusMiddleware
from prometheus_client import REGISTRY

from common import batchpoll, kafka
from common.consume import Failure
from common.metrics import CONSUMER_LAG, DEAD_LETTERS
from common.settings import Settings
from common.telemetry import tracer_provider
from common.topics import Topic, Topics, topic_plan
from common.tracing import exporting, publish

log = logging.getLogger(__name__)
batchpoll.install()  # every batch subscriber polls without FastStream's idle sleep


class Broker(KafkaBroker):
    """FastStream's Kafka broker, starting its subscribers at once.

    aiokafka's ``consumer.start()`` returns once its group is joined (3-5 s on Tansu; a
    rebalance on Kafka), and FastStream's ``BrokerUsecase.start`` starts the subscribers one
    after another: a service with two groups was ready 10 s after its start, and every
    restart (a deploy, a crash) kept it out that long. This is that method with the
    subscribers started together; the publishers still start after them."""

    async def start(self) -> None:
        await self.connect()
        await asyncio.gather(*(sub.start() for sub in self.subscribers))
        for pub in self.publishers:
            await pub.start()
        self.running = True


_current_message: ContextVar[Any] = ContextVar("sluice_kafka_message")


class CurrentMessage(BaseMiddleware):
    """Hands the message being consumed to :func:`subscribe`'s handler through a context
    variable (FastStream's own injection costs a thread hop per batch)."""

    async def consume_scope(self, call_next: Any, msg: Any) -> Any:
        token = _current_message.set(msg)
        try:
            return await call_next(msg)
        finally:
            _current_message.reset(token)


def create_broker(settings: Settings, client_id: str) -> KafkaBroker:
    """The service's broker, with FastStream's Prometheus middleware (messages received,
    processed, failed and published per topic, with durations) and its OpenTelemetry
    middleware (W3C ``traceparent`` in the Kafka headers, spans per publish and consume)."""
    middlewares: list[Any] = [
        KafkaPrometheusMiddleware(registry=REGISTRY, app_name=client_id, metrics_prefix="sluice"),
        CurrentMessage,
    ]
    if exporting():  # spans cost a fifth of a consumer's CPU: made only when exported
        middlewares.insert(0, KafkaTelemetryMiddleware(tracer_provider=tracer_provider(client_id)))
    return Broker(
        kafka.bootstrap_servers(settings),
        client_id=client_id,
        middlewares=middlewares,
        security=kafka.broker_security(settings),
        **kafka.producer_args(settings),
        linger_ms=0,
        request_timeout_ms=settings.kafka_request_timeout_ms,
        logger=logging.getLogger("faststream"),
        log_level=logging.DEBUG,
    )


async def raw_body(msg: Any) -> Any:
    """Hand handlers the raw bytes (a list for batches); contracts are decoded with msgspec."""
    return msg.body


def consumer_options(
    settings: Settings, group_id: str, *, batch: bool = True, background: bool = False, linger: bool = False
) -> dict[str, Any]:
    """Keyword arguments for ``broker.subscriber``: at-least-once, batched, tuned fetches.

    A batch poll returns as soon as records are fetched and never sleeps after an empty one
    (``common.batchpoll``), so its timeout only sets how often an idle subscriber wakes.
    ``linger`` (off the request path, where records come in volume): the broker holds each
    fetch until ``kafka_linger_fetch_min_bytes`` or ``kafka_linger_fetch_wait_ms``, so a
    batch gathers what arrived meanwhile instead of the one record that woke it.
    """
    wait_ms = settings.kafka_background_fetch_max_wait_ms if background else settings.kafka_fetch_max_wait_ms
    min_bytes = 1
    if linger:
        wait_ms, min_bytes = settings.kafka_linger_fetch_wait_ms, settings.kafka_linger_fetch_min_bytes
    opts: dict[str, Any] = {
        "group_id": group_id,
        "ack_policy": AckPolicy.MANUAL,  # subscribe() commits (Commits) and rewinds
        "auto_offset_reset": "earliest",
        "fetch_max_wait_ms": wait_ms,
        "fetch_min_bytes": min_bytes,
        "session_timeout_ms": settings.kafka_session_timeout_ms,
        "heartbeat_interval_ms": settings.kafka_heartbeat_interval_ms,
        "decoder": raw_body,
    }
    if batch:
        opts.update(
            batch=True,
            max_records=settings.kafka_max_records,
            batch_timeout_ms=wait_ms if background or linger else settings.kafka_batch_timeout_ms,
            # the poll returns as soon as records arrive (common.batchpoll)
        )
    return opts


async def ensure_topics(settings: Settings, names: Iterable[str], partitions: int | None = None) -> None:
    """Create topics if missing (Apache Kafka may have auto-creation disabled), with the
    replication factor and retention of ``python -m sluice topics`` (common.provision)."""
    names = list(names)
    async with kafka.admin_client(**kafka.client_args(settings)) as admin:
        # a broker that is down is asked no more: another is (common.kafka.admin_retry)
        await kafka.admin_retry(lambda: create_missing(admin, settings, names, partitions))


async def ensure_shared_topics(settings: Settings) -> None:
    """The suite's shared topics, at a service's start: created when missing where services
    may (``kafka_create_topics``), else waited for (the operator's topics Job makes them,
    ``python -m sluice topics``) and never created; a start that still misses one after
    ``kafka_topics_wait_s`` fails, naming them."""
    names = service_topics(settings)
    if settings.kafka_create_topics:
        await ensure_topics(settings, names)
        return
    async with kafka.admin_client(**kafka.client_args(settings)) as admin:
        missing = await wait_for_topics(admin, names, settings.kafka_topics_wait_s)
    if missing:
        raise RuntimeError(
            "topics missing (SLUICE_KAFKA_CREATE_TOPICS is off: the topics Job, python -m sluice"
            " topics, creates them): " + ", ".join(missing)
        )


async def wait_for_topics(admin: Any, names: list[str], wait_s: float, every_s: float = 2.0) -> list[str]:
    """Those of ``names`` the cluster still lacks after up to ``wait_s`` (none: all there)."""
    deadline = asyncio.get_running_loop().time() + wait_s
    while True:
        existing = set(await kafka.admin_retry(admin.list_topics))
        missing = [n for n in names if n not in existing]
        if not missing or asyncio.get_running_loop().time() >= deadline:
            return missing
        log.warning("waiting for topics the topics Job creates: %s", ", ".join(missing))
        await asyncio.sleep(every_s)


async def create_missing(
    admin: AIOKafkaAdminClient, settings: Settings, names: list[str], partitions: int | None
) -> list[str]:
    """Create those of ``names`` the cluster lacks (partitions, replication factor,
    min.insync.replicas and retention from the settings); the names it lacked. The one place
    topics are created: services at start (``ensure_topics``; the shared ones only where
    ``kafka_create_topics``) and ``python -m sluice topics`` (common.provision)."""
    existing = set(await admin.list_topics())
    missing = [n for n in names if n not in existing]
    if missing:
        plan = topic_plan(settings, missing, partitions)  # the anchors topic keeps its records forever
        with contextlib.suppress(TopicAlreadyExistsError):  # another instance made them first
            await admin.create_topics(
                [NewTopic(t.name, t.partitions, t.replication_factor, topic_configs=t.configs) for t in plan]
            )
    return missing


def service_topics(settings: Settings) -> list[str]:
    t = Topics(settings.topic_prefix)
    return [t[topic] for topic in Topic]


class Commits:
    """Offsets of processed records, committed at most every ``interval_s`` per subscriber."""

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self.pending: dict[TopicPartition, int] = {}
        self.last = 0.0
        self.consumer: Any = None
        self._flush: asyncio.TimerHandle | None = None

    async def done(self, consumer: Any, records: Sequence[Any]) -> None:
        self.consumer = consumer
        for r in records:
            tp = TopicPartition(r.topic, r.partition)
            self.pending[tp] = max(r.offset + 1, self.pending.get(tp, 0))
        loop = asyncio.get_running_loop()
        wait = self.last + self.interval_s - loop.time()
        if wait <= 0:
            await self.commit()
        elif self._flush is None:  # commit what is pending even if no record follows
            self._flush = loop.call_later(wait, lambda: asyncio.ensure_future(self.commit()))

    async def commit(self) -> None:
        if self._flush is not None:
            self._flush.cancel()
            self._flush = None
        offsets, self.pending = self.pending, {}
        self.last = asyncio.get_running_loop().time()
        if not offsets or self.consumer is None:
            return
        try:
            await self.consumer.commit(offsets)
        except KafkaError as exc:  # a rebalance took the partitions: their new owner re-reads
            log.info("offset commit skipped (%r): the records will be read again", exc)


class CommitOnRevoke(ConsumerRebalanceListener):  # type: ignore[misc]  # aiokafka ships no stubs (upstream typing gap)
    """Commit what was processed before a rebalance takes the partitions: with offsets committed
    only every ``Commits.interval_s``, the new owner would otherwise read that much again (safe:
    every consumer is idempotent, but work done twice). aiokafka awaits the coroutine before it
    rejoins the group, so the commit lands under the old generation."""

    def __init__(self, commits: Commits) -> None:
        self.commits = commits

    async def on_partitions_revoked(self, revoked: Any) -> None:
        await self.commits.commit()

    async def on_partitions_assigned(self, assigned: Any) -> None:
        return None


_LAG_SERIES: dict[str, set[tuple[str, int]]] = {}


def record_lag(consumer: Any, group_id: str, records: Sequence[Any]) -> None:
    """``sluice_consumer_lag`` of the partitions this batch read, as of its last record; the
    series of a partition a rebalance took from this instance are removed, so a lag it had when
    it lost the partition does not stay on the gauge (and on the alert) after its new owner
    caught up."""
    last: dict[tuple[str, int], int] = {}
    for r in records:
        last[(r.topic, r.partition)] = max(r.offset, last.get((r.topic, r.partition), -1))
    for (t, p), offset in last.items():
        high = consumer.highwater(TopicPartition(t, p))
        if high is not None:
            CONSUMER_LAG.labels(group_id, t, str(p)).set(max(high - offset - 1, 0))
    series = _LAG_SERIES.setdefault(group_id, set())
    series.update(last)
    if len(series) > len(last):  # series of partitions this batch did not read: still ours?
        assigned = consumer.assignment()
        for t, p in [tp for tp in series if TopicPartition(*tp) not in assigned]:
            series.discard((t, p))
            with contextlib.suppress(KeyError):
                CONSUMER_LAG.remove(group_id, t, str(p))


def subscribe(
    broker: KafkaBroker,
    settings: Settings,
    topic: str,
    group_id: str,
    process: Callable[[Sequence[Any]], Awaitable[None]],
    *,
    background: bool = False,
    linger: bool = False,
) -> None:
    """Subscribe ``process`` (a :class:`common.consume.BatchProcessor`) to ``topic`` in
    ``group_id``: batched, committed after the handler returns, rewound if it raises.
    ``background`` and ``linger``: see :func:`consumer_options`."""
    commits = Commits(settings.kafka_commit_interval_ms / 1000)

    async def handler(body: list[bytes]) -> None:
        # The message (and its consumer) come from CurrentMessage: declared as ``KafkaMessage``
        # and ``Consumer`` parameters, fast_depends resolved each through a worker thread
        # (anyio.to_thread) for every batch, about 10 % of a consumer's CPU in the profile.
        msg = _current_message.get()
        consumer = msg.consumer
        raw = msg.raw_message
        records = raw if isinstance(raw, tuple) else (raw,)
        try:
            await process(records)
        except BaseException:
            with contextlib.suppress(Exception):
                await msg.nack()  # rewind to the batch's first records: read again
            raise
        await commits.done(consumer, records)
        record_lag(consumer, group_id, records)

    handler.__name__ = f"on_{topic.rsplit('.', 1)[-1]}_{group_id}".replace("-", "_").replace(".", "_")
    options = consumer_options(settings, group_id, background=background, linger=linger)
    broker.subscriber(topic, listener=CommitOnRevoke(commits), **options)(handler)


class DeadLetter(msgspec.Struct, tag="dead_letter.v2", tag_field="type", kw_only=True):
    """A message given up on, with what an operator needs to judge and redrive it."""

    dead_letter_id: str
    service: str
    topic: str  # where it came from, and where a redrive sends it back
    partition: int
    offset: int
    key: bytes | None = None
    error: str
    attempts: int
    request_id: str | None = None
    payload: bytes  # the original bytes, exactly (redriven as they were)
    dead_lettered_at: str


async def dead_letter(broker: KafkaBroker, settings: Settings, service: str, failure: Failure) -> None:
    """Publish ``failure`` to the dead-letter topic (``<prefix>.dlq``)."""
    rec, msg = failure.record, failure.message
    ctx = getattr(msg, "ctx", None)
    request_id = getattr(ctx, "request_id", None) or getattr(msg, "request_id", None)
    letter = DeadLetter(
        # by service too: the events topic has two readers, and each refusal is its own letter
        dead_letter_id=f"dlq_{service}_{rec.topic}_{rec.partition}_{rec.offset}",
        service=service,
        topic=rec.topic,
        partition=rec.partition,
        offset=rec.offset,
        key=rec.key,
        error=repr(failure.error)[:2000],
        attempts=failure.attempts,
        request_id=request_id if isinstance(request_id, str) else None,
        payload=rec.value or b"",
        dead_lettered_at=datetime.now(UTC).isoformat(),
    )
    log.error(
        "dead-lettered %s[%d]@%d after %d attempts: %s",
        rec.topic,
        rec.partition,
        rec.offset,
        failure.attempts,
        letter.error,
        extra={"request_id": letter.request_id},
    )
    DEAD_LETTERS.labels(service, rec.topic).inc()
    await publish(
        broker,
        msgspec.json.encode(letter),
        topic=Topics(settings.topic_prefix).dead_letters,
        key=letter.dead_letter_id.encode(),
        request_id=letter.request_id,
    )

"""Operator changes honoured even when Redis missed the eviction (issue 25).

Admin evicts a revoked key's or a changed tenant's cache entry right after its commit, and
also writes a control event to its outbox in the same transaction (relayed until published).
If Redis could not be reached at the eviction, the entry would have stayed cached for its TTL
(``CACHE_TTL_S``, 300 s): a revoked key kept working. Every gateway reads the control events
and evicts the entries they name (``common.auth.evict``: the generation bumped, the entry
dropped; idempotent), waiting out a Redis outage like any consumer (``common.consume``), so
the change holds as soon as Redis answers again.

The reader joins **no consumer group**: it assigns itself every partition of the topic, like
the reply reader (``common.rpc``). A group would make each gateway's start wait for a join,
and on Tansu a group whose members all restarted at once was seen never to settle (a gateway
not ready after 120 s). Nothing is committed either: a starting gateway reads the events of
the last ``CACHE_TTL_S`` (``offsets_for_times``) and evicts again, so an event published while
no gateway ran is still honoured; older events name entries that have expired anyway. Each
gateway evicts every entry once more: a cache miss, never a stale answer.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

import msgspec
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from faststream.kafka import KafkaBroker
from redis.asyncio import Redis

from common import kafka
from common.auth import evict, key_cache_name, tenant_cache_name
from common.broker import dead_letter
from common.consume import BatchProcessor, Failure
from common.contracts.events import ControlEvent
from common.settings import Settings
from gateway.auth import CACHE_TTL_S

log = logging.getLogger(__name__)

_decode = msgspec.json.Decoder(ControlEvent)


def stale_entries(raws: Sequence[bytes]) -> list[str]:
    """The cache entries the control events name (an unreadable one names nothing)."""
    names: list[str] = []
    for raw in raws:
        try:
            ev = _decode.decode(raw)
        except (msgspec.DecodeError, msgspec.ValidationError):
            log.warning("unreadable control event ignored")
            continue
        if ev.kind == "api_key.revoked" and ev.key_hash:
            names.append(key_cache_name(ev.key_hash))
        elif ev.kind == "tenant.updated" and ev.tenant_id:
            names.append(tenant_cache_name(ev.tenant_id))
    return list(dict.fromkeys(names))


async def evict_named(redis: Redis, raws: Sequence[bytes]) -> int:
    names = stale_entries(raws)
    if names:
        await evict(redis, names)
    return len(names)


def processor(broker: KafkaBroker, settings: Settings, redis: Redis) -> BatchProcessor[bytes]:
    """The control events' handling: evict what they name, retried until Redis answers."""

    async def give_up(failure: Failure) -> None:
        await dead_letter(broker, settings, "gateway", failure)

    async def handle(raws: Sequence[bytes]) -> None:
        await evict_named(redis, raws)

    return BatchProcessor(
        name="gateway-control", decode=lambda raw: raw, handle_batch=handle, dead_letter=give_up
    )


class ControlReader:
    """Reads every partition of the control topic without a group (a supervised task)."""

    def __init__(self, settings: Settings, topic: str, process: BatchProcessor[bytes]) -> None:
        self.settings = settings
        self.topic = topic
        self.process = process
        self.next_offset: dict[TopicPartition, int] | None = None  # where a restarted reader resumes

    async def run(self) -> None:
        consumer = AIOKafkaConsumer(
            **kafka.client_args(self.settings),
            group_id=None,
            enable_auto_commit=False,
            fetch_max_wait_ms=self.settings.kafka_background_fetch_max_wait_ms,
            request_timeout_ms=self.settings.kafka_request_timeout_ms,
        )
        await consumer.start()
        try:
            await self._assign(consumer)
            while True:
                batches = await consumer.getmany(timeout_ms=1000, max_records=500)
                for tp, records in batches.items():
                    await self.process(records)  # returns once evicted (or dead-lettered)
                    assert self.next_offset is not None
                    self.next_offset[tp] = records[-1].offset + 1
        finally:
            await consumer.stop()

    async def _partitions(self) -> list[int]:
        """The topic's partitions as the cluster reports them now (a consumer without a group
        or subscription does not track the topic's metadata itself)."""
        admin = AIOKafkaAdminClient(**kafka.client_args(self.settings))
        await admin.start()
        try:
            found = await admin.describe_topics([self.topic])
        finally:
            await admin.close()
        return sorted(p["partition"] for t in found if t["error_code"] == 0 for p in t["partitions"])

    async def _assign(self, consumer: AIOKafkaConsumer) -> None:
        tps = [TopicPartition(self.topic, p) for p in await self._partitions()]
        if not tps:
            raise RuntimeError(f"topic {self.topic} has no partitions yet")
        consumer.assign(tps)
        if self.next_offset is None:
            since = int(time.time() * 1000) - CACHE_TTL_S * 1000
            found = await consumer.offsets_for_times(dict.fromkeys(tps, since))
            ends = await consumer.end_offsets(tps)
            # No record at or after ``since``: Apache Kafka answers None, Tansu offset 0 with
            # timestamp -1 (which would re-read the whole history); both mean "from the end".
            self.next_offset = {
                tp: hit.offset if (hit := found.get(tp)) is not None and hit.timestamp >= 0 else ends[tp]
                for tp in tps
            }
        for tp in tps:
            consumer.seek(tp, self.next_offset.get(tp, 0))

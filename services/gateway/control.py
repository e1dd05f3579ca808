"""Operator changes honoured even when Redis missed the eviction (docs/security.md, "Round 3").

Admin evicts a revoked key's, a revoked access token's (by ``jti``) or a changed (or
disabled) tenant's cache entry right after its commit, and
also writes a control event to its outbox in the same transaction (relayed until published).
If Redis could not be reached at the eviction, the entry would have stayed cached for its TTL
(``CACHE_TTL_S``, 300 s): a revoked key kept working. Every gateway reads the control events
and evicts the entries they name (``common.auth.evict``: the generation bumped, the entry
dropped; idempotent), waiting out a Redis outage like any consumer (``common.consume``), so
the change holds as soon as Redis answers again (a Redis that answers READONLY or OOM, a
failover or a full memory, is waited out too: ``common.faults``). A cache name is built only
from a field of the expected shape (a SHA-256, a jti, a tenant id): anything else is ignored.

The reader joins **no consumer group**: it assigns itself every partition of the topic, like
the reply reader (``common.rpc``). A group would make each gateway's start wait for a join,
and on Tansu a group whose members all restarted at once was seen never to settle (a gateway
not ready after 120 s). Nothing is committed either: a starting gateway reads the events of
the last ``CACHE_TTL_S`` (``offsets_for_times``) and evicts again, so an event published while
no gateway ran is still honoured; older events name entries that have expired anyway. Each
gateway evicts every entry once more: a cache miss, never a stale answer. The topic's
partitions are looked up again every ``refresh_s``: a partition added later is read from its
start, instead of never.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Sequence

import msgspec
from aiokafka import AIOKafkaConsumer, TopicPartition
from faststream.kafka import KafkaBroker
from redis.asyncio import Redis

from common import kafka
from common.auth import JTI_PATTERN, evict, key_cache_name, tenant_cache_name, token_cache_name
from common.broker import dead_letter
from common.consume import BatchProcessor, Failure
from common.contracts.events import ControlEvent
from common.settings import Settings
from gateway.auth import CACHE_TTL_S
from gateway.revocations import Revocations

log = logging.getLogger(__name__)

_decode = msgspec.json.Decoder(ControlEvent)


_KEY_HASH = re.compile(r"^[0-9a-f]{64}$")  # common.auth.hash_api_key: hex SHA-256
_JTI = re.compile(JTI_PATTERN)


def _tenant_id(value: str) -> bool:
    try:
        return str(uuid.UUID(value)) == value
    except ValueError:
        return False


def _named(ev: ControlEvent) -> tuple[str, str] | None:
    """The credential one event names (a key hash, a jti or a tenant id) and its cache entry,
    or None (another kind, or a field out of shape: a cache name is built only from a SHA-256,
    a jti or a tenant id, never from free text)."""
    if ev.kind == "api_key.revoked" and ev.key_hash and _KEY_HASH.match(ev.key_hash):
        return ev.key_hash, key_cache_name(ev.key_hash)
    if ev.kind == "access_token.revoked" and ev.jti and _JTI.match(ev.jti):
        return ev.jti, token_cache_name(ev.jti)
    if ev.kind == "tenant.updated" and ev.tenant_id and _tenant_id(ev.tenant_id):
        return ev.tenant_id, tenant_cache_name(ev.tenant_id)
    if ev.kind in ("api_key.revoked", "access_token.revoked", "tenant.updated"):
        log.warning("control event %s with a malformed field ignored", ev.kind)
    return None


def named_credentials(raws: Sequence[bytes]) -> list[tuple[str, str, str]]:
    """``(kind, credential, cache entry)`` for each event that names one (an unreadable event
    names nothing)."""
    named: list[tuple[str, str, str]] = []
    for raw in raws:
        try:
            ev = _decode.decode(raw)
        except (msgspec.DecodeError, msgspec.ValidationError):
            log.warning("unreadable control event ignored")
            continue
        found = _named(ev)
        if found is not None:
            named.append((ev.kind, *found))
    return named


def stale_entries(raws: Sequence[bytes]) -> list[str]:
    """The cache entries the control events name."""
    return list(dict.fromkeys(name for _, _, name in named_credentials(raws)))


async def evict_named(redis: Redis, raws: Sequence[bytes], revocations: Revocations | None = None) -> int:
    """Tell the revocation floor first (it holds even if Valkey is down or lies), then evict."""
    named = named_credentials(raws)
    if revocations is not None:
        for kind, credential, _ in named:
            revocations.learn_event(kind, credential)
    names = list(dict.fromkeys(name for _, _, name in named))
    if names:
        await evict(redis, names)
    return len(names)


def processor(
    broker: KafkaBroker, settings: Settings, redis: Redis, revocations: Revocations | None = None
) -> BatchProcessor[bytes]:
    """The control events' handling: the floor told, then the entries they name evicted,
    retried until Redis answers."""

    async def give_up(failure: Failure) -> None:
        await dead_letter(broker, settings, "gateway", failure)

    async def handle(raws: Sequence[bytes]) -> None:
        await evict_named(redis, raws, revocations)

    return BatchProcessor(
        name="gateway-control", decode=lambda raw: raw, handle_batch=handle, dead_letter=give_up
    )


class ControlReader:
    """Reads every partition of the control topic without a group (a supervised task)."""

    def __init__(
        self, settings: Settings, topic: str, process: BatchProcessor[bytes], refresh_s: float = 30.0
    ) -> None:
        self.settings = settings
        self.topic = topic
        self.process = process
        self.next_offset: dict[TopicPartition, int] | None = None  # where a restarted reader resumes
        self.refresh_s = refresh_s  # how often the topic's partitions are looked up again

    async def run(self) -> None:
        consumer = AIOKafkaConsumer(
            **kafka.client_args(self.settings),
            group_id=None,
            enable_auto_commit=False,
            # A partition added later is read from its start; if retention already removed
            # that start, from the earliest record kept (never skipped to the end).
            auto_offset_reset="earliest",
            fetch_max_wait_ms=self.settings.kafka_background_fetch_max_wait_ms,
            request_timeout_ms=self.settings.kafka_request_timeout_ms,
        )
        await consumer.start()
        try:
            await self._assign(consumer)
            checked = time.monotonic()
            while True:
                batches = await consumer.getmany(timeout_ms=1000, max_records=500)
                for tp, records in batches.items():
                    await self.process(records)  # returns once evicted (or dead-lettered)
                    assert self.next_offset is not None
                    self.next_offset[tp] = records[-1].offset + 1
                if time.monotonic() - checked >= self.refresh_s:  # partitions added since
                    await self._assign(consumer)
                    checked = time.monotonic()
        finally:
            await consumer.stop()

    async def _partitions(self) -> list[int]:
        return sorted(await kafka.partition_leaders(self.topic, **kafka.client_args(self.settings)))

    async def _assign(self, consumer: AIOKafkaConsumer) -> None:
        """Assign every partition the topic has now, each at the offset it resumes from: on
        the first start, the first record of the last cache TTL (else the end); a partition
        that appeared since, from its start. Unchanged partitions: nothing is touched."""
        tps = [TopicPartition(self.topic, p) for p in await self._partitions()]
        if not tps:
            raise RuntimeError(f"topic {self.topic} has no partitions yet")
        if self.next_offset is not None and set(tps) <= consumer.assignment():
            return
        if self.next_offset is None:
            self.next_offset = await self._look_back(consumer, tps)
        consumer.assign(tps)
        for tp in tps:
            consumer.seek(tp, self.next_offset.setdefault(tp, 0))

    @staticmethod
    async def _look_back(consumer: AIOKafkaConsumer, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        """Where each partition's reading starts: the first record of the last cache TTL, or
        the end when there is none. The end is read first: a record published between the two
        lookups is then found by the timestamp lookup or lies after the end read, and is read
        either way (read the other way round, it fell between them and was skipped)."""
        ends = await consumer.end_offsets(tps)
        since = int(time.time() * 1000) - CACHE_TTL_S * 1000
        found = await consumer.offsets_for_times(dict.fromkeys(tps, since))
        return {tp: hit.offset if (hit := found.get(tp)) is not None else ends[tp] for tp in tps}

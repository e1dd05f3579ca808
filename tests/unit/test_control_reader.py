"""The gateways' control-event reader (gateway.control), its gaps closed:

- the end offsets are read before the timestamp lookup (read after, an event published in
  between was skipped);
- partitions added to the topic later are read (they were never assigned);
- Redis answering READONLY (failover) or OOM is waited out, not dead-lettered as permanent;
- a cache name is built only from a field of the expected shape (``key_hash`` was unbounded);
- revoked access tokens (``jti``) are evicted like revoked keys.
Against the real broker: tests/integration/test_gateway_control.py.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import msgspec
import pytest
from aiokafka import TopicPartition
from aiokafka.structs import OffsetAndTimestamp
from redis.exceptions import OutOfMemoryError, ReadOnlyError, ResponseError

from common.auth import hash_api_key, key_cache_name, tenant_cache_name, token_cache_name
from common.contracts.events import ControlEvent
from common.faults import is_transient
from common.settings import Settings
from gateway import control

pytestmark = pytest.mark.unit

TOPIC = "sluice.control.events"


def _raw(**fields: Any) -> bytes:
    return msgspec.json.encode(ControlEvent(**fields))


def test_each_kind_names_its_entry_and_only_from_a_well_formed_field() -> None:
    key_hash, jti, tenant = hash_api_key("sk_test_x"), uuid.uuid4().hex, str(uuid.uuid4())
    raws = [
        _raw(kind="api_key.revoked", key_hash=key_hash),
        _raw(kind="access_token.revoked", jti=jti, tenant_id=tenant),
        _raw(kind="tenant.updated", tenant_id=tenant),
        _raw(kind="api_key.revoked", key_hash="f" * 100_000),  # unbounded: ignored
        _raw(kind="api_key.revoked", key_hash="sluice:tenant:" + tenant),  # not a hash
        _raw(kind="access_token.revoked", jti="a b"),
        _raw(kind="tenant.updated", tenant_id="x" * 300),
        _raw(kind="policy.changed", tenant_id=tenant),
        b"not json",
    ]
    assert control.stale_entries(raws) == [
        key_cache_name(key_hash),
        token_cache_name(jti),
        tenant_cache_name(tenant),
    ]


def test_readonly_and_oom_redis_answers_are_transient() -> None:
    assert is_transient(ReadOnlyError("You can't write against a read only replica."))
    assert is_transient(OutOfMemoryError("command not allowed when used memory > 'maxmemory'."))
    assert not is_transient(ResponseError("WRONGTYPE Operation against a key holding the wrong kind"))


class FakeConsumer:
    """An AIOKafkaConsumer as the reader uses it, with a record published at a chosen call."""

    def __init__(self, partitions: list[int]) -> None:
        self.partitions = partitions
        self.calls: list[str] = []
        self.ends = dict.fromkeys(partitions, 4)  # offsets 0-3 are older than the look-back
        self.assigned: set[TopicPartition] = set()
        self.seeks: list[tuple[int, int]] = []

    def _looked_up(self, what: str) -> None:
        self.calls.append(what)
        if len(self.calls) == 1:  # a record arrives between the first lookup and the second
            self.ends[0] += 1

    async def end_offsets(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        ends = {tp: self.ends[tp.partition] for tp in tps}
        self._looked_up("end_offsets")
        return ends

    async def offsets_for_times(self, query: dict[TopicPartition, int]) -> dict[TopicPartition, Any]:
        # A record newer than the look-back exists only if one was published by now.
        found = {tp: OffsetAndTimestamp(4, 1) if self.ends[tp.partition] > 4 else None for tp in query}
        self._looked_up("offsets_for_times")
        return found

    def assign(self, tps: list[TopicPartition]) -> None:
        self.assigned = set(tps)

    def assignment(self) -> set[TopicPartition]:
        return set(self.assigned)

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self.seeks.append((tp.partition, offset))


def _reader(consumer: FakeConsumer, refresh_s: float = 30.0) -> control.ControlReader:
    reader = control.ControlReader(Settings(), TOPIC, None)  # type: ignore[arg-type]
    reader.refresh_s = refresh_s

    async def partitions() -> list[int]:
        return list(consumer.partitions)

    reader._partitions = partitions  # type: ignore[method-assign]  # noqa: SLF001
    return reader


async def test_a_record_published_between_the_two_lookups_is_read() -> None:
    consumer = FakeConsumer([0])
    reader = _reader(consumer)
    await reader._assign(consumer)  # type: ignore[arg-type]  # noqa: SLF001
    assert consumer.calls[0] == "end_offsets"
    assert consumer.seeks == [(0, 4)]  # the record at offset 4 is read, not skipped


async def test_a_hit_of_the_timestamp_lookup_is_where_reading_starts() -> None:
    consumer = FakeConsumer([0])
    consumer.ends[0] = 9  # offsets 4-8 are within the look-back
    consumer.calls.append("earlier")  # nothing arrives in between this time
    reader = _reader(consumer)
    await reader._assign(consumer)  # type: ignore[arg-type]  # noqa: SLF001
    assert consumer.seeks == [(0, 4)]


async def test_partitions_added_later_are_assigned_from_their_start(monkeypatch: pytest.MonkeyPatch) -> None:
    consumer = FakeConsumer([0])
    polls = 0

    async def getmany(timeout_ms: int, max_records: int) -> dict[TopicPartition, list[Any]]:
        nonlocal polls
        polls += 1
        if polls == 2:
            consumer.partitions.append(1)  # an operator added a partition
            consumer.ends[1] = 0
        if polls == 4:
            raise asyncio.CancelledError
        return {}

    async def nothing() -> None:
        return None

    fake: Any = consumer
    fake.getmany, fake.start, fake.stop = getmany, nothing, nothing
    monkeypatch.setattr(control, "AIOKafkaConsumer", lambda **kw: consumer)
    reader = _reader(consumer, refresh_s=0.0)
    with pytest.raises(asyncio.CancelledError):
        await reader.run()
    assert TopicPartition(TOPIC, 1) in consumer.assigned
    assert consumer.seeks[-2:] == [(0, 4), (1, 0)]  # partition 0 resumes where it was
    assert reader.next_offset == {TopicPartition(TOPIC, 0): 4, TopicPartition(TOPIC, 1): 0}

"""Reading the suite's Kafka topics from tests."""

from __future__ import annotations

import msgspec
from aiokafka import AIOKafkaConsumer

from common.broker import DeadLetter
from common.kafka import partition_leaders
from common.topics import Topics


async def dead_letters(bootstrap: str, prefix: str, wait_s: float = 2.0) -> list[DeadLetter]:
    """Every record on ``<prefix>.dlq`` so far, decoded."""
    consumer = AIOKafkaConsumer(
        Topics(prefix).dead_letters,
        bootstrap_servers=bootstrap,
        group_id=None,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        fetch_max_wait_ms=10,
    )
    await consumer.start()
    try:
        batches = await consumer.getmany(timeout_ms=int(wait_s * 1000))
        return [msgspec.json.decode(r.value, type=DeadLetter) for recs in batches.values() for r in recs]
    finally:
        await consumer.stop()


async def partitions(bootstrap: str, topic: str) -> list[int]:
    """``topic``'s partitions as the cluster reports them (common.kafka.partition_leaders)."""
    return sorted(await partition_leaders(topic, bootstrap_servers=bootstrap.split(",")))

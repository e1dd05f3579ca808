"""``sluice_consumer_lag`` (common.broker.record_lag): the lag a batch leaves behind, and no
stale series for a partition a rebalance took away (the consumer-lag alert of
deploy/prometheus/alerts.yml would otherwise fire on a number nobody updates)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from aiokafka import TopicPartition
from prometheus_client import REGISTRY

from common.broker import record_lag

pytestmark = pytest.mark.unit


@dataclass
class Rec:
    topic: str
    partition: int
    offset: int


@dataclass
class FakeConsumer:
    high: dict[tuple[str, int], int]
    assigned: set[tuple[str, int]] = field(default_factory=set)

    def highwater(self, tp: TopicPartition) -> int | None:
        return self.high.get((tp.topic, tp.partition))

    def assignment(self) -> set[TopicPartition]:
        return {TopicPartition(t, p) for t, p in self.assigned}


def lag(group: str, topic: str, partition: int) -> float | None:
    return REGISTRY.get_sample_value(
        "sluice_consumer_lag", {"consumer": group, "topic": topic, "partition": str(partition)}
    )


def test_the_lag_is_the_high_watermark_past_the_last_record_read() -> None:
    consumer = FakeConsumer({("t.lag1", 0): 100, ("t.lag1", 1): 10}, {("t.lag1", 0), ("t.lag1", 1)})
    record_lag(consumer, "g-lag1", [Rec("t.lag1", 0, 40), Rec("t.lag1", 0, 49), Rec("t.lag1", 1, 9)])
    assert lag("g-lag1", "t.lag1", 0) == 50  # offsets 50..99 are behind
    assert lag("g-lag1", "t.lag1", 1) == 0


def test_a_partition_taken_by_a_rebalance_leaves_the_gauge() -> None:
    consumer = FakeConsumer({("t.lag2", 0): 5000, ("t.lag2", 1): 10}, {("t.lag2", 0), ("t.lag2", 1)})
    record_lag(consumer, "g-lag2", [Rec("t.lag2", 0, 0)])
    assert lag("g-lag2", "t.lag2", 0) == 4999
    consumer.assigned = {("t.lag2", 1)}  # partition 0 went to another instance
    record_lag(consumer, "g-lag2", [Rec("t.lag2", 1, 9)])
    assert lag("g-lag2", "t.lag2", 0) is None
    assert lag("g-lag2", "t.lag2", 1) == 0


def test_partitions_still_assigned_keep_their_series() -> None:
    consumer = FakeConsumer({("t.lag3", 0): 30, ("t.lag3", 1): 10}, {("t.lag3", 0), ("t.lag3", 1)})
    record_lag(consumer, "g-lag3", [Rec("t.lag3", 0, 9)])
    record_lag(consumer, "g-lag3", [Rec("t.lag3", 1, 9)])
    assert lag("g-lag3", "t.lag3", 0) == 20

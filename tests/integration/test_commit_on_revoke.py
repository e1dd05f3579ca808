"""Offsets committed when a rebalance takes the partitions (common.broker.CommitOnRevoke), on
the real broker: processed offsets are committed at most every ``kafka_commit_interval_ms``, so
without the commit on revoke a second instance joining the group would read again everything
the first had processed since its last commit (harmless, the inboxes answer it, but work done
twice; docs/failure-model.md). Here the interval is a minute, so the first instance's progress
after its first batch is all pending when the second joins."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.admin import NewTopic

from common import kafka
from common.broker import create_broker, subscribe
from tests.conftest import Stack
from tests.support.wait import eventually_async

pytestmark = pytest.mark.integration

PARTITIONS = 4


async def test_a_joining_instance_reads_nothing_the_first_had_processed(stack: Stack) -> None:
    settings = stack.settings().model_copy(update={"kafka_commit_interval_ms": 60_000})
    topic, group = f"revoke-{uuid.uuid4().hex[:10]}", f"revoke-{uuid.uuid4().hex[:10]}"
    args = kafka.client_args(settings)
    async with kafka.admin_client(**args) as admin:
        await admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    seen: dict[str, list[bytes]] = {"a": [], "b": []}

    def reader(name: str) -> Any:
        async def process(records: Sequence[Any]) -> None:
            seen[name].extend(r.value for r in records)

        return process

    producer = AIOKafkaProducer(**args)
    await producer.start()
    first, second = create_broker(settings, "revoke-a"), create_broker(settings, "revoke-b")
    subscribe(first, settings, topic, group, reader("a"))
    subscribe(second, settings, topic, group, reader("b"))
    try:
        await first.start()
        await producer.send_and_wait(topic, b"first", partition=0)  # its batch commits at once
        await eventually_async(lambda: _now(len(seen["a"]) >= 1), timeout=60, what="the first record")
        for i in range(200):  # processed, their offsets pending for a minute
            await producer.send(topic, f"r{i}".encode(), partition=i % PARTITIONS)
        await producer.flush()
        await eventually_async(lambda: _now(len(seen["a"]) >= 201), timeout=60, what="201 records processed")
        await second.start()
        await eventually_async(lambda: _two_members(args, group), timeout=60, what="both in the group")
        for p in range(PARTITIONS):  # a marker on every partition, after the rebalance
            await producer.send_and_wait(topic, f"marker{p}".encode(), partition=p)
        markers = {f"marker{p}".encode() for p in range(PARTITIONS)}
        await eventually_async(
            lambda: _now(markers <= {*seen["a"], *seen["b"]}), timeout=60, what="every marker read"
        )
    finally:
        await second.stop()
        await first.stop()
        await producer.stop()
        async with kafka.admin_client(**args) as admin:
            await admin.delete_topics([topic])
    assert {m for m in seen["b"] if m.startswith(b"marker")}, "the second instance was given no partition"
    again = [v for v in seen["b"] if not v.startswith(b"marker")]
    assert again == [], f"the second instance read {len(again)} records the first had processed"


async def _now(holds: bool) -> bool:
    """A probe for eventually_async, which sleeps between looks: the consumers run meanwhile."""
    return holds


async def _two_members(args: dict[str, Any], group: str) -> bool:
    """The group rebalanced with both instances (DescribeGroups, as aiokafka returns it raw:
    each group as error code, id, state, protocol type, protocol, members, ...)."""
    async with kafka.admin_client(**args) as admin:
        [response] = await admin.describe_consumer_groups([group])
    [described] = response.groups
    return described[2] == "Stable" and len(described[5]) == 2

"""``python -m sluice topics`` against the real broker: creates every topic, is idempotent,
and reports (exit 1) a topic whose partition count differs from the setting."""

from __future__ import annotations

import asyncio
import subprocess
import uuid

import pytest
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from tests.conftest import Stack
from tests.support.cli import run_module
from tools.stack.processes import ROOT, python_env

pytestmark = pytest.mark.integration


def _topics(stack: Stack, prefix: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in python_env({}).items() if not k.startswith("SLUICE_")}
    env |= {"SLUICE_ENV": "development", "SLUICE_KAFKA_BOOTSTRAP": stack.stores.kafka_bootstrap}
    env |= {"SLUICE_TOPIC_PREFIX": prefix, "SLUICE_KAFKA_TOPIC_PARTITIONS": "4"}
    return run_module("sluice", "topics", env=env, cwd=ROOT, timeout=60)


def test_topics_are_created_then_checked(stack: Stack) -> None:
    prefix = "prov" + uuid.uuid4().hex[:8]
    first = _topics(stack, prefix)
    assert first.returncode == 0, first.stdout + first.stderr
    assert f"{prefix}.events: created, 4 partitions" in first.stdout, first.stdout
    again = _topics(stack, prefix)
    assert again.returncode == 0 and "created" not in again.stdout, again.stdout
    assert f"{prefix}.events: ok, 4 partitions" in again.stdout


def test_a_topic_with_another_partition_count_is_reported(stack: Stack) -> None:
    prefix = "prov" + uuid.uuid4().hex[:8]

    async def odd_topic() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=stack.stores.kafka_bootstrap)
        await admin.start()
        try:
            await admin.create_topics([NewTopic(f"{prefix}.dlq", 2, 1)])
        finally:
            await admin.close()

    asyncio.run(odd_topic())
    done = _topics(stack, prefix)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"{prefix}.dlq: 2 partitions, 4 configured" in done.stdout, done.stdout
    assert f"{prefix}.events: created, 4 partitions" in done.stdout

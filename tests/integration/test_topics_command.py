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
from tools.stack.processes import ROOT, free_port, python_env

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


async def _listed(stack: Stack, prefix: str) -> set[str]:
    admin = AIOKafkaAdminClient(bootstrap_servers=stack.stores.kafka_bootstrap)
    await admin.start()
    try:
        return {t for t in await admin.list_topics() if t.startswith(prefix)}
    finally:
        await admin.close()


def test_a_stopped_gateway_takes_its_reply_topic_with_it(stack: Stack) -> None:
    """A pod's name is new each life (Kubernetes): the reply topic of a life that ended in a
    graceful stop is deleted then, not left behind for ever."""
    instance = "gateway-life-" + uuid.uuid4().hex[:8]
    replies = f"sluice.replies.{instance}."
    proc = stack.suite.start("gateway", free_port(), instance=instance)
    stack.suite.wait_ready([proc], timeout=120)
    assert len(asyncio.run(_listed(stack, replies))) == 1
    stack.suite.stop_proc(proc)  # SIGTERM: the graceful stop
    assert "Application shutdown complete" in proc.log.read_text(), proc.log.read_text()[-2000:]
    assert asyncio.run(_listed(stack, replies)) == set()


def test_a_gateway_where_the_job_owns_the_topics_creates_none(stack: Stack) -> None:
    """SLUICE_KAFKA_CREATE_TOPICS off (deploy/k8s): under a prefix nobody provisioned, a
    gateway waits for the shared topics, creates none of them, and fails its start naming
    them; once `python -m sluice topics` has made them, the same start succeeds."""
    prefix = "jobowned" + uuid.uuid4().hex[:8]
    extra = {
        "SLUICE_TOPIC_PREFIX": prefix,
        "SLUICE_KAFKA_CREATE_TOPICS": "false",
        "SLUICE_KAFKA_TOPICS_WAIT_S": "3",
    }
    refused = stack.suite.start("gateway", free_port(), extra=extra, instance="gateway-" + prefix)
    assert refused.popen.wait(120) != 0
    assert "topics missing" in refused.log.read_text() and f"{prefix}.events" in refused.log.read_text()
    assert asyncio.run(_listed(stack, prefix + ".")) == set()  # not even its reply topic
    assert _topics(stack, prefix).returncode == 0
    started = stack.suite.start("gateway", free_port(), extra=extra, instance="gateway-" + prefix)
    stack.suite.wait_ready([started], timeout=120)
    stack.suite.stop_proc(started)

"""The journal's anchors topic (docs/security.md, "Journal anchors") on the real broker: kept
forever, never compacted. verify_journal against tampered journals:
tests/inprocess/test_journal_anchors.py."""

from __future__ import annotations

import pytest
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from tests.conftest import Stack
from tests.support.db import run_async
from tests.support.journal import _topic

pytestmark = pytest.mark.integration


def test_the_anchors_topic_is_kept_forever_and_never_compacted(stack: Stack) -> None:
    async def configs() -> dict[str, str]:
        admin = AIOKafkaAdminClient(bootstrap_servers=stack.stores.kafka_bootstrap)
        await admin.start()
        try:
            [found] = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, _topic(stack))])
        finally:
            await admin.close()
        return {name: value for name, value, *_ in found.resources[0][4]}

    found = run_async(configs())
    assert (found["retention.ms"], found["cleanup.policy"]) == ("-1", "delete"), found

"""ensure_topics with one broker of the cluster down: the admin client asked the dead node,
got NodeNotReadyError and the gateway's start failed (exit 3, make chaos 2026-11-26, a gateway
restarted while a broker was killed). A retriable error is tried again (another node), a
non-retriable one stops the start at once."""

from __future__ import annotations

from typing import Any

import aiokafka.admin
import pytest
from aiokafka.errors import NodeNotReadyError, TopicAuthorizationFailedError

import common.broker as broker
from common import kafka
from common.settings import Settings

pytestmark = pytest.mark.unit


class FakeAdmin:
    def __init__(self, failures: list[Exception]) -> None:
        self.failures = failures
        self.asked = 0
        self.created: list[str] = []
        self.closed = False

    async def start(self) -> None:
        pass

    async def close(self) -> None:
        self.closed = True

    async def list_topics(self) -> list[str]:
        self.asked += 1
        if self.failures:
            raise self.failures.pop(0)
        return ["sluice.events"]

    async def create_topics(self, topics: list[Any]) -> None:
        self.created += [t.name for t in topics]


def install(monkeypatch: pytest.MonkeyPatch, admin: FakeAdmin) -> None:
    monkeypatch.setattr(aiokafka.admin, "AIOKafkaAdminClient", lambda **_: admin)  # common.kafka.admin_client
    monkeypatch.setattr(kafka, "ADMIN_RETRY_S", 5.0)


async def test_a_broker_that_is_down_is_asked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    admin = FakeAdmin([NodeNotReadyError("node 1"), NodeNotReadyError("node 1")])
    install(monkeypatch, admin)
    await broker.ensure_topics(Settings(), ["sluice.events", "sluice.ledger.commands"])
    assert (admin.asked, admin.created, admin.closed) == (3, ["sluice.ledger.commands"], True)


async def test_a_refusal_that_will_not_change_stops_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    admin = FakeAdmin([TopicAuthorizationFailedError("no")])
    install(monkeypatch, admin)
    with pytest.raises(TopicAuthorizationFailedError):
        await broker.ensure_topics(Settings(), ["sluice.events"])
    assert (admin.asked, admin.closed) == (1, True)

"""Who makes the shared topics: a service at start where it may (make run, compose, the tests),
else only the operator's topics Job (deploy/k8s): a service then waits for them and never
creates one, so no topic is ever made with a service's settings (one replica) instead of the
cluster's. A topic is created with the replication factor and min.insync.replicas of the
settings."""

from __future__ import annotations

from typing import Any

import aiokafka.admin
import pytest

from common import broker
from common.settings import Settings

pytestmark = pytest.mark.unit


class FakeAdmin:
    """The admin client a service's start talks to: topics that exist (``appear`` after so
    many listings), and every creation asked for."""

    existing: set[str] = set()
    appear: dict[str, int] = {}
    created: list[Any] = []
    listings = 0

    def __init__(self, **_: Any) -> None:
        pass

    async def start(self) -> None:
        pass

    async def close(self) -> None:
        pass

    async def list_topics(self) -> list[str]:
        FakeAdmin.listings += 1
        late = {t for t, after in FakeAdmin.appear.items() if FakeAdmin.listings > after}
        return sorted(FakeAdmin.existing | late)

    async def create_topics(self, topics: list[Any]) -> None:
        FakeAdmin.created.extend(topics)
        FakeAdmin.existing |= {t.name for t in topics}


@pytest.fixture
def admin(monkeypatch: pytest.MonkeyPatch) -> type[FakeAdmin]:
    FakeAdmin.existing, FakeAdmin.appear, FakeAdmin.created, FakeAdmin.listings = set(), {}, [], 0
    monkeypatch.setattr(aiokafka.admin, "AIOKafkaAdminClient", FakeAdmin)  # common.kafka.admin_client
    return FakeAdmin


def _settings(**kw: Any) -> Settings:
    return Settings(**{"kafka_topics_wait_s": 0.2, **kw})


async def test_a_service_that_may_creates_what_is_missing_at_the_clusters_settings(
    admin: type[FakeAdmin],
) -> None:
    settings = _settings(kafka_replication_factor=3, kafka_min_insync_replicas=2)
    await broker.ensure_shared_topics(settings)
    assert {t.name for t in admin.created} == set(broker.service_topics(settings))
    assert {t.replication_factor for t in admin.created} == {3}
    assert {t.topic_configs["min.insync.replicas"] for t in admin.created} == {"2"}


async def test_where_the_job_owns_them_a_service_never_creates_and_fails_naming_the_missing(
    admin: type[FakeAdmin],
) -> None:
    settings = _settings(kafka_create_topics=False)
    names = broker.service_topics(settings)
    admin.existing = set(names[1:])
    with pytest.raises(RuntimeError, match="topics missing") as failed:
        await broker.ensure_shared_topics(settings)
    assert names[0] in str(failed.value) and names[1] not in str(failed.value)
    assert admin.created == [] and admin.listings >= 1


async def test_where_the_job_owns_them_a_service_waits_for_them(
    admin: type[FakeAdmin], monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = _settings(kafka_create_topics=False, kafka_topics_wait_s=30)
    names = broker.service_topics(settings)
    admin.existing = set(names[1:])
    admin.appear = {names[0]: 2}  # the Job makes the last one while the service waits
    sleeps: list[float] = []

    async def no_wait(seconds: float) -> None:
        sleeps.append(seconds)

    monkeypatch.setattr(broker.asyncio, "sleep", no_wait)
    await broker.ensure_shared_topics(settings)
    assert admin.created == [] and admin.listings == 3 and len(sleeps) == 2

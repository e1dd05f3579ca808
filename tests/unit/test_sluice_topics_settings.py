"""``python -m sluice topics`` needs the broker's settings and no service secret: in production
with no secret at all it gets to the broker (with load_settings() it refused, naming every
service's secrets, so an operator had to hold them all to make the topics)."""

from __future__ import annotations

import os
from typing import Any

import pytest

import common.provision
from sluice.__main__ import topics

pytestmark = pytest.mark.unit


def test_topics_runs_in_production_without_any_service_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    for k in [k for k in os.environ if k.startswith("SLUICE_")]:
        monkeypatch.delenv(k)
    monkeypatch.setenv("SLUICE_ENV", "production")
    monkeypatch.setenv("SLUICE_KAFKA_BOOTSTRAP", "kafka-0:9092,kafka-1:9092")
    seen: list[Any] = []

    async def provision(settings: Any) -> tuple[int, list[str]]:
        seen.append(settings)
        return 0, ["sluice.events: ok, 12 partitions"]

    monkeypatch.setattr(common.provision, "provision", provision)
    assert topics() == 0
    [settings] = seen
    assert settings.kafka_bootstrap == "kafka-0:9092,kafka-1:9092"
    assert not settings.jwt_secret.get_secret_value()  # nothing of a service's was needed

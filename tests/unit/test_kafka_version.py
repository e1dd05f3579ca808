"""One Apache Kafka release everywhere: the embedded broker of make run, the tests,
the bench and the fault runs; the testcontainers path; compose.yaml; deploy/k8s. A test that
finds two versions fails, naming each place and what it says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tools.stack import kafka as kafka_embedded

ROOT = Path(__file__).resolve().parents[2]
IMAGE = re.compile(r"\bapache/kafka:([0-9][\w.\-]*)")

pytestmark = pytest.mark.unit


def versions() -> dict[str, set[str]]:
    """Every place that names a Kafka broker release, and the releases it names."""
    found: dict[str, set[str]] = {
        "tools.stack.kafka.KAFKA_VERSION": {kafka_embedded.KAFKA_VERSION},
        "tools.stack.kafka.KAFKA_IMAGE (testcontainers)": set(IMAGE.findall(kafka_embedded.KAFKA_IMAGE)),
    }
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    found["compose.yaml"] = {
        m for svc in compose["services"].values() for m in IMAGE.findall(svc.get("image", ""))
    }
    for path in sorted((ROOT / "deploy" / "k8s").rglob("*.y*ml")):
        named = set(IMAGE.findall(path.read_text()))
        if named:
            found[str(path.relative_to(ROOT))] = named
    stores = (ROOT / "tools" / "stack" / "stores.py").read_text()
    other = re.findall(r"cp-kafka:([\w.\-]+)", stores)  # the testcontainers path, by name
    found["tools.stack.stores (other images)"] = set(IMAGE.findall(stores)) | set(other)
    return found


def mismatches(found: dict[str, set[str]], pinned: str) -> list[str]:
    return [f"{where}: {sorted(names)}" for where, names in found.items() if names - {pinned}]


def test_every_place_names_the_embedded_release() -> None:
    found = versions()
    assert found["compose.yaml"], "compose.yaml names no apache/kafka image"
    assert "deploy/k8s/base/kafka.yaml" in found, "deploy/k8s runs no apache/kafka broker"
    assert mismatches(found, kafka_embedded.KAFKA_VERSION) == []


def test_a_second_version_is_caught() -> None:
    """The check above can fail: one place moved to another release is named."""
    found = versions()
    found["compose.yaml"] = {"3.8.0"}
    assert mismatches(found, kafka_embedded.KAFKA_VERSION) == ["compose.yaml: ['3.8.0']"]

"""On Kubernetes the topics are the operator's: the release's Job creates them at three
replicas with two in sync (python -m sluice topics) before it sets the ACLs, and every
Deployment is told never to create one; no principal but the Job's may."""

from __future__ import annotations

import pytest

from common import acls
from common.settings import Settings
from tests.support.k8s import K8S, generator, render

pytestmark = pytest.mark.unit

GEN = generator()


@pytest.mark.parametrize("overlay", ["production", "cloudnative-pg"])
def test_topics_are_made_by_the_job_at_three_replicas_two_in_sync(overlay: str) -> None:
    docs = render(K8S / "overlays" / overlay)
    config: dict[str, str] = {}
    for d in docs:
        if d["kind"] == "ConfigMap":
            config.update(d.get("data", {}))
    kafka = {k[len("SLUICE_") :].lower(): v for k, v in config.items() if k.startswith("SLUICE_KAFKA_")}
    settings = Settings(**kafka)
    assert (settings.kafka_replication_factor, settings.kafka_min_insync_replicas) == (3, 2)
    assert settings.kafka_create_topics is False
    for d in docs:  # no Deployment turns creation back on
        if d["kind"] == "Deployment":
            for c in d["spec"]["template"]["spec"]["containers"]:
                assert all(e["name"] != "SLUICE_KAFKA_CREATE_TOPICS" for e in c.get("env", [])), d["metadata"]
    (job,) = [d for d in docs if d["kind"] == "Job" and d["metadata"]["name"] == GEN.job_name("kafka-acls")]
    (container,) = job["spec"]["template"]["spec"]["containers"]
    script = " ".join(container["command"] + container["args"])
    assert script.index("sluice topics") < script.index("sluice acls"), script


def test_no_service_principal_may_create_a_shared_topic() -> None:
    plan = acls.plan()
    shared = {acls.Pattern(f"sluice.{topic}") for topic in acls.PRODUCERS}
    assert all(not (access.create & shared) for access in plan.values())

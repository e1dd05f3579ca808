"""Budgets and secrets of deploy/k8s, over the base and the rendered production and
cloudnative-pg overlays (docs/operations.md, "Connection budget"): every service at its
autoscaler's maximum, with the migration Job, opens fewer PostgreSQL connections than the
server allows; each pod mounts its own Secret and no other; every image of the suite is this
checkout's release."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from common.db import create_engine
from common.settings import Settings
from tests.support.k8s import K8S, generator, render

pytestmark = pytest.mark.unit

GEN = generator()
ROOT = Path(__file__).resolve().parents[2]
OVERLAYS = {
    "base": K8S / "base",
    **{n: K8S / "overlays" / n for n in ("production", "cloudnative-pg", "strimzi")},
}
# What PostgreSQL keeps from the services: superuser_reserved_connections (PostgreSQL's default,
# 3) and, on CloudNativePG, its instance manager's, exporter's and backups' connections (at most
# 10 here, an allowance: the operator documents no figure).
RESERVED = 3
PLATFORM_OWN = 10


@pytest.fixture(scope="module", params=OVERLAYS)
def docs(request: pytest.FixtureRequest) -> list[dict[str, Any]]:
    rendered: list[dict[str, Any]] = render(OVERLAYS[request.param])
    return rendered


def connections_per_pod(docs: list[dict[str, Any]]) -> int:
    """A pod's most connections: its engine's pool and overflow (common.db.create_engine) at the
    ConfigMap's SLUICE_DB_POOL_SIZE, or the settings' default."""
    (config,) = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "sluice-config"]
    size = int(config["data"].get("SLUICE_DB_POOL_SIZE", Settings.model_fields["db_pool_size"].default))
    pool = create_engine("postgresql+asyncpg://u:p@h/db", size).pool
    return int(pool.size() + pool._max_overflow)  # type: ignore[attr-defined]  # QueuePool's


def max_connections(docs: list[dict[str, Any]]) -> int:
    """The Cluster's max_connections; without one (base, production: a server of your own),
    what the base expects that server to allow (generate.DATABASE_MAX_CONNECTIONS)."""
    clusters = [d for d in docs if d["kind"] == "Cluster"]
    if not clusters:
        return int(GEN.DATABASE_MAX_CONNECTIONS)
    return int(clusters[0]["spec"]["postgresql"]["parameters"]["max_connections"])


def most_pods(docs: list[dict[str, Any]]) -> dict[str, int]:
    """Each Deployment's most pods: its HPA's or ScaledObject's maximum, else its replicas."""
    out = {d["metadata"]["name"]: d["spec"].get("replicas", 1) for d in docs if d["kind"] == "Deployment"}
    for d in docs:
        if d["kind"] == "HorizontalPodAutoscaler":
            out[d["spec"]["scaleTargetRef"]["name"]] = d["spec"]["maxReplicas"]
        elif d["kind"] == "ScaledObject":
            out[d["spec"]["scaleTargetRef"]["name"]] = d["spec"]["maxReplicaCount"]
    return out


def test_the_pools_at_their_maximums_fit_max_connections(docs: list[dict[str, Any]]) -> None:
    per_pod = connections_per_pod(docs)
    pods = most_pods(docs)
    jobs = [d for d in docs if d["kind"] == "Job" and d["metadata"]["name"] == GEN.job_name("migrate")]
    clusters = [d for d in docs if d["kind"] == "Cluster"]
    total = per_pod * (sum(pods.values()) + len(jobs)) + RESERVED + (PLATFORM_OWN if clusters else 0)
    assert total <= max_connections(docs), f"{pods} x {per_pod} + the migration Job + reserved = {total}"


# The brokers' CA, its ca.crt alone: the base's own cluster's, or Strimzi's cluster CA
# (deploy/k8s/strimzi.py), which every client of that cluster reads alike.
BROKER_CAS = (GEN.KAFKA_TLS_SECRET, "sluice-kafka-cluster-ca-cert")


def _secrets(doc: dict[str, Any]) -> set[str]:
    """The Secrets a workload's pod mounts, the brokers' CA (its ca.crt alone) aside."""
    pod = doc["spec"]["template"]["spec"]
    names = set()
    for v in pod.get("volumes", []):
        sources = [v["secret"] | {"name": v["secret"]["secretName"]}] if "secret" in v else []
        sources += [s["secret"] for s in v.get("projected", {}).get("sources", []) if "secret" in s]
        names |= {s["name"] for s in sources if s["name"] not in BROKER_CAS}
    return names


def test_each_deployment_mounts_its_own_secret_alone(docs: list[dict[str, Any]]) -> None:
    """Its own Secret, and on Strimzi its own KafkaUser's (no pod another's password)."""
    mounted = {
        d["metadata"]["labels"]["app.kubernetes.io/name"]: _secrets(d)
        for d in docs
        if d["kind"] in ("Deployment", "Job") and d["metadata"]["name"] != GEN.job_name("kafka-scram")
    }
    strimzi = any(d["kind"] == "Kafka" for d in docs)
    user = {
        pod: {f"sluice-kafka-user-{pod}"} if strimzi and pod in GEN.SERVICES else set() for pod in mounted
    }
    assert mounted == {pod: {GEN.secret_name(pod)} | user[pod] for pod in mounted}, mounted
    assert set(mounted) >= set(GEN.SERVICES) | {"migrate"} | (set() if strimzi else {"kafka-acls"})


def test_every_image_of_the_suite_is_this_release(docs: list[dict[str, Any]]) -> None:
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    images = {
        c["image"]
        for d in docs
        for c in d.get("spec", {}).get("template", {}).get("spec", {}).get("containers", [])
        if c["image"].startswith(GEN.IMAGE_NAME)
    }
    assert images == {f"{GEN.IMAGE_NAME}:{version}"}

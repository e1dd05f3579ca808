"""Scheduling safety of deploy/k8s (docs/operations.md, "Run on Kubernetes"), over the base
and the rendered production and cloudnative-pg overlays: a node drain never hangs on a budget
(every autoscaled Deployment keeps at least two pods, every budget lets one go), pods spread over
nodes and zones, the Kafka brokers have a budget, no Deployment fights its autoscaler over
``replicas``, and KEDA reads the lag of every consumer group the consumers use."""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from common.topics import Topics
from tests.support.k8s import K8S, render

pytestmark = pytest.mark.unit

SERVICES_DIR = Path(__file__).resolve().parents[2] / "services"
CONSUMERS = ("ledger", "compliance", "webhooks")
OVERLAYS = {
    "base": K8S / "base",
    **{n: K8S / "overlays" / n for n in ("production", "cloudnative-pg", "strimzi")},
}


@pytest.fixture(scope="module", params=OVERLAYS)
def docs(request: pytest.FixtureRequest) -> list[dict[str, Any]]:
    rendered: list[dict[str, Any]] = render(OVERLAYS[request.param])
    return rendered


def _kind(docs: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == kind}


def _scalers(docs: list[dict[str, Any]]) -> dict[str, tuple[int, dict[str, Any]]]:
    """Each autoscaled Deployment's name: (its floor, its HPA or ScaledObject)."""
    out = {}
    for hpa in _kind(docs, "HorizontalPodAutoscaler").values():
        out[hpa["spec"]["scaleTargetRef"]["name"]] = (hpa["spec"].get("minReplicas", 1), hpa)
    for scaled in _kind(docs, "ScaledObject").values():
        out[scaled["spec"]["scaleTargetRef"]["name"]] = (scaled["spec"].get("minReplicaCount", 0), scaled)
    return out


def _selects(budget: dict[str, Any], labels: dict[str, str]) -> bool:
    wanted = budget["spec"]["selector"]["matchLabels"].items()
    return all(labels.get(k) == v for k, v in wanted)


def test_a_drain_never_waits_on_a_budget(docs: list[dict[str, Any]]) -> None:
    """Each workload has a budget that lets one pod go, and keeps at least two pods, so that
    one is always left while the other moves."""
    scalers = _scalers(docs)
    workloads = {**_kind(docs, "Deployment"), **_kind(docs, "StatefulSet")}
    budgets = list(_kind(docs, "PodDisruptionBudget").values())
    wrong = []
    for name, workload in workloads.items():
        labels = workload["spec"]["template"]["metadata"]["labels"]
        mine = [b["spec"] for b in budgets if _selects(b, labels)]
        if [{k: v for k, v in b.items() if k != "selector"} for b in mine] != [{"maxUnavailable": 1}]:
            wrong.append(f"{name}: budgets {mine}, not one with maxUnavailable 1")
        floor = scalers[name][0] if name in scalers else workload["spec"].get("replicas", 1)
        if floor < 2:
            wrong.append(f"{name}: as few as {floor} pod(s)")
    assert wrong == []
    assert {n for n, (floor, _) in scalers.items() if n.removeprefix("sluice-") in CONSUMERS} == {
        f"sluice-{c}" for c in CONSUMERS
    }


def test_every_deployment_and_the_brokers_spread_over_nodes_and_zones(docs: list[dict[str, Any]]) -> None:
    unspread = []
    for name, workload in {**_kind(docs, "Deployment"), **_kind(docs, "StatefulSet")}.items():
        pod = workload["spec"]["template"]
        spread = pod["spec"].get("topologySpreadConstraints", [])
        keys = {
            c["topologyKey"]
            for c in spread
            if c["labelSelector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
        }
        if keys != {"kubernetes.io/hostname", "topology.kubernetes.io/zone"}:
            unspread.append(f"{name}: spread by {sorted(keys)}")
    assert unspread == []


def test_no_autoscaled_deployment_sets_replicas(docs: list[dict[str, Any]]) -> None:
    """A ``replicas`` field is applied again on every apply, and sets the count back under the
    autoscaler's feet."""
    scaled = _scalers(docs)
    both = [n for n, d in _kind(docs, "Deployment").items() if n in scaled and "replicas" in d["spec"]]
    assert both == []


def consumer_groups(service: str) -> set[tuple[str, str]]:
    """The (group, topic) of every ``subscribe`` call in the service's app.py, evaluated as the
    service evaluates them under the default prefix."""
    tree = ast.parse((SERVICES_DIR / service / "app.py").read_text())
    topics = Topics()
    scope = {"runtime": SimpleNamespace(topics=topics), "group": topics.group(service)}
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "subscribe":
            topic, group = (eval(ast.unparse(arg), {}, scope) for arg in node.args[2:4])  # noqa: S307 - our own source
            found.add((group, topic))
    return found


@pytest.mark.parametrize("service", CONSUMERS)
def test_keda_watches_every_consumer_group_that_can_lag(docs: list[dict[str, Any]], service: str) -> None:
    scaled = _kind(docs, "ScaledObject")[f"sluice-{service}"]
    watched = {(t["metadata"]["consumerGroup"], t["metadata"]["topic"]) for t in scaled["spec"]["triggers"]}
    assert consumer_groups(service)  # the app.py was read
    assert watched == consumer_groups(service)

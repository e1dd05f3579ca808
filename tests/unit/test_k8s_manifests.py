"""deploy/k8s (contract 13.6): every manifest of the production and cloudnative-pg overlays
validates against a pinned Kubernetes version (kubernetes-validate, strict), the KEDA
ScaledObjects and CloudNativePG's Cluster against the schemas kept in deploy/k8s/schemas; every
Deployment has probes, limits and a non-root read-only security context; the base on disk is
what the generator writes."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from tests.support.k8s import generator

pytestmark = pytest.mark.unit

K8S = Path(__file__).resolve().parents[2] / "deploy" / "k8s"
KUBERNETES_VERSION = "1.33.0"
# KEDA's kinds, checked against the schemas kept in deploy/k8s/schemas
KEDA_SCHEMAS = {
    "ScaledObject": "keda-scaledobject.json",
    "TriggerAuthentication": "keda-triggerauthentication.json",  # KEDA's Kafka principal (issue 38)
}


# CloudNativePG's Cluster (issue 45): the operator's own CRD schema (v1.30.0), made strict here
CNPG_SCHEMA = "cnpg-cluster.json"


GEN = generator()


def strict(node: Any) -> Any:
    """A CRD's structural schema with unknown fields refused, as kubectl's strict field
    validation (the default since Kubernetes 1.27) refuses them: every object that lists its
    properties and neither allows more nor preserves unknown fields."""
    if isinstance(node, list):
        return [strict(x) for x in node]
    if not isinstance(node, dict):
        return node
    out = {k: strict(v) for k, v in node.items()}
    if (
        "properties" in out
        and "additionalProperties" not in out
        and not out.get("x-kubernetes-preserve-unknown-fields")
    ):
        out["additionalProperties"] = False
    return out


def cnpg_schema() -> dict[str, Any]:
    schema: dict[str, Any] = strict(json.loads((K8S / "schemas" / CNPG_SCHEMA).read_text()))
    schema["properties"]["metadata"] = {"type": "object", "required": ["name", "namespace"]}
    return schema


def problems(doc: dict[str, Any]) -> list[str]:
    """What a platform team would refuse in one resource."""
    name = f"{doc['kind']}/{doc['metadata']['name']}"
    if doc["kind"] in KEDA_SCHEMAS:
        schema = json.loads((K8S / "schemas" / KEDA_SCHEMAS[doc["kind"]]).read_text())
        errors = [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(doc)]
        return [f"{name}: {e}" for e in errors]
    if doc["apiVersion"] == "postgresql.cnpg.io/v1":
        assert doc["kind"] == "Cluster", name
        errors = [e.message for e in jsonschema.Draft202012Validator(cnpg_schema()).iter_errors(doc)]
        return [f"{name}: {e}" for e in errors]
    try:
        kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
    except kubernetes_validate.ValidationError as exc:
        return [f"{name}: {exc.message}"]
    out = []
    if doc["kind"] in ("Deployment", "Job"):
        for c in doc["spec"]["template"]["spec"]["containers"]:
            sc = c.get("securityContext", {})
            if not (sc.get("runAsNonRoot") and sc.get("readOnlyRootFilesystem")):
                out.append(f"{name}: {c['name']} must run as non-root on a read-only filesystem")
            if not c.get("resources", {}).get("limits") or not c.get("resources", {}).get("requests"):
                out.append(f"{name}: {c['name']} needs resource requests and limits")
            if doc["kind"] == "Deployment" and not (c.get("livenessProbe") and c.get("readinessProbe")):
                out.append(f"{name}: {c['name']} needs liveness and readiness probes")
    return out


@pytest.fixture(scope="module")
def production() -> list[dict[str, Any]]:
    return GEN.render(K8S / "overlays" / "production")


def test_every_manifest_of_the_production_overlay_is_valid(production: list[dict[str, Any]]) -> None:
    assert [p for doc in production for p in problems(doc)] == []
    kinds = sorted({d["kind"] for d in production})
    assert kinds == [
        "ConfigMap",
        "Deployment",
        "HorizontalPodAutoscaler",
        "Job",
        "Namespace",  # sluice, Pod Security admission's restricted profile (issue 38)
        "NetworkPolicy",
        "PodDisruptionBudget",
        "ScaledObject",
        "Service",
        "StatefulSet",  # the three-node Apache Kafka cluster (issue 34)
        "TriggerAuthentication",  # KEDA's SASL login to Kafka (issue 38)
    ]
    gateway = next(
        d for d in production if d["kind"] == "Deployment" and d["metadata"]["name"] == "sluice-gateway"
    )
    assert gateway["spec"]["replicas"] == 3  # the overlay's patch applied
    scaled = [d for d in production if d["kind"] == "ScaledObject"]
    assert {d["spec"]["maxReplicaCount"] for d in scaled} == {GEN.PARTITIONS}


def scanner_findings(docs: list[dict[str, Any]]) -> list[str]:
    """What checkov's Kubernetes checks found in the base on 2026-11-26 (issue 38 item 6),
    checked without checkov (``make lint`` runs checkov itself): a resource in the default
    namespace, a pod without a pod-level security context, a secret passed as an environment
    variable, an image by ``latest`` or by no tag."""
    out = []
    for doc in docs:
        name = f"{doc['kind']}/{doc['metadata']['name']}"
        if doc["kind"] != "Namespace" and doc["metadata"].get("namespace", "default") == "default":
            out.append(f"{name}: in the default namespace")
        pod = doc.get("spec", {}).get("template", {}).get("spec")
        if pod is None:
            continue
        if not pod.get("securityContext", {}).get("runAsNonRoot"):
            out.append(f"{name}: no pod-level security context")
        for c in pod["containers"]:
            if any("secretKeyRef" in e.get("valueFrom", {}) for e in c.get("env", [])):
                out.append(f"{name}: {c['name']} takes a secret as an environment variable")
            if any("secretRef" in e for e in c.get("envFrom", [])):
                out.append(f"{name}: {c['name']} takes a Secret as environment variables")
            if ":" not in c["image"].split("/")[-1].split("@")[0] or c["image"].endswith(":latest"):
                out.append(f"{name}: {c['name']} runs a mutable image, {c['image']}")
    return out


def test_the_scanners_findings_are_fixed_in_the_base_and_the_overlay(
    production: list[dict[str, Any]],
) -> None:
    base = GEN.render(K8S / "base")
    assert scanner_findings(base) == []
    assert scanner_findings(production) == []
    images = {
        c["image"]
        for d in production
        for c in d.get("spec", {}).get("template", {}).get("spec", {}).get("containers", [])
    }
    # one release for every service and the migration Job (the overlay's images entry)
    assert images == {"ghcr.io/sluice/sluice:1.0.0", GEN.KAFKA_IMAGE}
    mounted = next(d for d in base if d["kind"] == "Deployment")["spec"]["template"]["spec"]
    assert mounted["volumes"][1]["secret"]["secretName"] == "sluice-secrets"


def test_the_scanner_checks_fail_on_a_broken_manifest(production: list[dict[str, Any]]) -> None:
    docs = copy.deepcopy(production)
    dep = next(d for d in docs if d["kind"] == "Deployment")
    del dep["metadata"]["namespace"]
    del dep["spec"]["template"]["spec"]["securityContext"]
    c = dep["spec"]["template"]["spec"]["containers"][0]
    c["env"].append({"name": "X", "valueFrom": {"secretKeyRef": {"name": "sluice-secrets", "key": "X"}}})
    c["image"] = "ghcr.io/sluice/sluice:latest"
    assert len(scanner_findings([dep])) == 4


@pytest.mark.parametrize(
    ("image", "entry", "result"),
    [
        ("r/a:1", {"name": "r/a", "newTag": "2"}, "r/a:2"),
        ("r/a:1", {"name": "r/a", "digest": "sha256:ab"}, "r/a@sha256:ab"),
        ("r/a:1", {"name": "r/a", "newTag": "2", "digest": "sha256:ab"}, "r/a:2@sha256:ab"),
        ("r/a:1@sha256:cd", {"name": "r/a", "newName": "m/a"}, "m/a:1@sha256:cd"),
        ("host:5000/r/a:1", {"name": "host:5000/r/a", "newTag": "2"}, "host:5000/r/a:2"),
        ("r/ab:1", {"name": "r/a", "newTag": "2"}, "r/ab:1"),
    ],
)
def test_the_overlays_images_are_set_as_kustomize_sets_them(
    image: str, entry: dict[str, str], result: str
) -> None:
    doc = {
        "spec": {
            "template": {"spec": {"containers": [{"image": image}], "initContainers": [{"image": image}]}}
        }
    }
    GEN._set_images([doc], entry)
    assert [c["image"] for c in doc["spec"]["template"]["spec"]["containers"]] == [result]
    assert [c["image"] for c in doc["spec"]["template"]["spec"]["initContainers"]] == [result]


@pytest.mark.parametrize(
    "breakage",
    ["no liveness probe", "no limits", "runs as root", "unknown field", "keda without triggers"],
)
def test_the_checks_fail_on_a_broken_manifest(production: list[dict[str, Any]], breakage: str) -> None:
    docs = copy.deepcopy(production)
    dep = next(d for d in docs if d["kind"] == "Deployment")
    c = dep["spec"]["template"]["spec"]["containers"][0]
    if breakage == "no liveness probe":
        del c["livenessProbe"]
    elif breakage == "no limits":
        del c["resources"]["limits"]
    elif breakage == "runs as root":
        c["securityContext"]["runAsNonRoot"] = False
    elif breakage == "unknown field":
        c["livnessProbe"] = c["livenessProbe"]
    else:
        dep = next(d for d in docs if d["kind"] == "ScaledObject")
        del dep["spec"]["triggers"]
    assert problems(dep) != []


def test_the_base_on_disk_is_what_the_generator_writes() -> None:
    for name, docs in GEN.base().items():
        on_disk = [d for d in yaml.safe_load_all((K8S / "base" / name).read_text()) if d]
        assert on_disk == docs, f"deploy/k8s/base/{name} differs: run python deploy/k8s/generate.py"


def _policy(docs: list[dict[str, Any]], name: str) -> dict[str, Any]:
    [found] = [d for d in docs if d["kind"] == "NetworkPolicy" and d["metadata"]["name"] == name]
    spec: dict[str, Any] = found["spec"]
    return spec


def test_admin_is_reached_from_the_operators_namespace_and_prometheus_only(
    production: list[dict[str, Any]],
) -> None:
    """Issue 43: the NetworkPolicy admitted anyone to admin, and kept Prometheus (in its own
    namespace) off the gateway's metrics port and the consumers."""
    spaces = lambda rule: {  # noqa: E731 - a small reading aid
        p.get("namespaceSelector", {}).get("matchLabels", {}).get("kubernetes.io/metadata.name")
        for p in rule.get("from", [])
    }
    admin = _policy(production, "sluice-admin-ingress")
    assert admin["podSelector"] == {"matchLabels": {"app.kubernetes.io/name": "admin"}}
    assert [spaces(r) for r in admin["ingress"]] == [{GEN.OPERATORS_NAMESPACE, GEN.MONITORING_NAMESPACE}]
    assert all(r.get("from") for r in admin["ingress"])  # no rule open to everyone
    gateway = _policy(production, "sluice-gateway-ingress")
    metrics = [r for r in gateway["ingress"] if {"port": GEN.METRICS_PORTS["gateway"]} in r.get("ports", [])]
    assert metrics and GEN.MONITORING_NAMESPACE in spaces(metrics[0])
    open_rules = [r for r in gateway["ingress"] if not r.get("from")]
    assert [r["ports"] for r in open_rules] == [[{"port": "http"}]]  # partners: the http port only
    consumers = _policy(production, "sluice-internal-only")
    assert GEN.MONITORING_NAMESPACE in spaces(consumers["ingress"][0])


@pytest.fixture(scope="module")
def cloudnative_pg() -> list[dict[str, Any]]:
    return GEN.render(K8S / "overlays" / "cloudnative-pg")


def _one(docs: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    [found] = [d for d in docs if d["kind"] == kind and name in (None, d["metadata"]["name"])]
    return found


def test_every_manifest_of_the_cloudnative_pg_overlay_is_valid(cloudnative_pg: list[dict[str, Any]]) -> None:
    """Issue 45: a three-instance Cluster with one synchronous standby, the services' roles
    managed by the operator, and the services pointed at its read-write Service."""
    from common.privileges import MIGRATIONS, SCHEMA_OF, role_name

    assert [p for doc in cloudnative_pg for p in problems(doc)] == []
    cluster = _one(cloudnative_pg, "Cluster")
    spec = cluster["spec"]
    assert spec["instances"] == 3
    sync = spec["postgresql"]["synchronous"]
    assert (sync["method"], sync["number"], sync["dataDurability"]) == ("any", 1, "required")
    assert sync["number"] < spec["instances"]  # CEL rules are not evaluated by the schema
    roles = {r["name"] for r in spec["managed"]["roles"] if r["login"] and r["ensure"] == "present"}
    assert roles == {role_name("sluice", s) for s in SCHEMA_OF}  # each service's own role
    assert spec["bootstrap"]["initdb"]["owner"] == role_name("sluice", MIGRATIONS)
    database = _one(cloudnative_pg, "Service", GEN.DATABASE_SERVICE)
    assert database["spec"]["externalName"] == f"{cluster['metadata']['name']}-rw.sluice.svc.cluster.local"
    # the production overlay underneath is kept whole
    assert _one(cloudnative_pg, "Deployment", "sluice-gateway")["spec"]["replicas"] == 3


def test_the_base_names_the_database_endpoint_it_expects() -> None:
    database = _one(GEN.render(K8S / "base"), "Service", GEN.DATABASE_SERVICE)
    assert database["spec"] == {"type": "ExternalName", "externalName": GEN.DATABASE_TARGET}


@pytest.mark.parametrize("breakage", ["unknown field", "unknown method", "no instances", "number as text"])
def test_the_cluster_schema_refuses_a_broken_cluster(
    cloudnative_pg: list[dict[str, Any]], breakage: str
) -> None:
    cluster = copy.deepcopy(_one(cloudnative_pg, "Cluster"))
    spec = cluster["spec"]
    if breakage == "unknown field":
        spec["postgresql"]["synchronus"] = spec["postgresql"].pop("synchronous")
    elif breakage == "unknown method":
        spec["postgresql"]["synchronous"]["method"] = "all"
    elif breakage == "no instances":
        del spec["instances"]
    else:
        spec["postgresql"]["synchronous"]["number"] = "1"
    assert problems(cluster) != []

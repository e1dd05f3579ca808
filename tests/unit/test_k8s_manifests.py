"""deploy/k8s (docs/operations.md, "Run on Kubernetes"): every manifest of the production and
cloudnative-pg overlays validates against a pinned Kubernetes version (kubernetes-validate,
strict), the KEDA ScaledObjects, CloudNativePG's Cluster and ScheduledBackup and the Barman Cloud plugin's
ObjectStore against the schemas kept in deploy/k8s/schemas (so does the commented restore
example); every Deployment has probes, limits and a non-root read-only security context; the
base on disk is what the generator writes."""

from __future__ import annotations

import copy
import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from tests.support.k8s import generator, render

pytestmark = pytest.mark.unit

K8S = Path(__file__).resolve().parents[2] / "deploy" / "k8s"
KUBERNETES_VERSION = "1.33.0"
# KEDA's kinds, checked against the schemas kept in deploy/k8s/schemas
KEDA_SCHEMAS = {
    "ScaledObject": "keda-scaledobject.json",
    "TriggerAuthentication": "keda-triggerauthentication.json",  # KEDA's Kafka principal
}


# The operators' kinds, checked against their own CRD schemas kept in deploy/k8s/schemas, made
# strict here: CloudNativePG's (v1.30.0) Cluster and ScheduledBackup, the Barman Cloud
# plugin's (v0.14.0) ObjectStore. A kind of theirs without a schema here is refused.
CRD_SCHEMAS = {
    ("postgresql.cnpg.io/v1", "Cluster"): "cnpg-cluster.json",
    ("postgresql.cnpg.io/v1", "ScheduledBackup"): "cnpg-scheduledbackup.json",
    ("barmancloud.cnpg.io/v1", "ObjectStore"): "barman-cloud-objectstore.json",
    # the Prometheus Operator's (v0.93.0): the services' and the Cluster's scrapes, the alerts
    ("monitoring.coreos.com/v1", "PodMonitor"): "prometheus-operator-podmonitors.json",
    ("monitoring.coreos.com/v1", "PrometheusRule"): "prometheus-operator-prometheusrules.json",
}
# Strimzi's (1.2.0): the strimzi overlay's Kafka, KafkaNodePool, KafkaTopics and KafkaUsers,
# against the openAPIV3Schema of the CRDs themselves (deploy/k8s/schemas/strimzi/README.md)
STRIMZI_CRDS = {
    ("kafka.strimzi.io/v1", kind): f"strimzi/{kind.lower()}.yaml"
    for kind in ("Kafka", "KafkaNodePool", "KafkaTopic", "KafkaUser")
}
BARMAN_CLOUD = "barman-cloud.cloudnative-pg.io"  # the plugin's name in a Cluster and a Backup
CNPG_OVERLAY = K8S / "overlays" / "cloudnative-pg"


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


def crd_schema(name: str) -> dict[str, Any]:
    """A kept schema (a JSON file), or the served version's schema of a kept CRD (YAML), strict."""
    text = (K8S / "schemas" / name).read_text()
    if name.endswith(".yaml"):
        (served,) = [v for v in yaml.safe_load(text)["spec"]["versions"] if v["served"]]
        kept = served["schema"]["openAPIV3Schema"]
    else:
        kept = json.loads(text)
    schema: dict[str, Any] = strict(kept)
    schema["properties"]["metadata"] = {"type": "object", "required": ["name", "namespace"]}
    return schema


def problems(doc: dict[str, Any]) -> list[str]:
    """What a platform team would refuse in one resource."""
    name = f"{doc['kind']}/{doc['metadata']['name']}"
    if doc["kind"] in KEDA_SCHEMAS:
        schema = json.loads((K8S / "schemas" / KEDA_SCHEMAS[doc["kind"]]).read_text())
        errors = [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(doc)]
        return [f"{name}: {e}" for e in errors]
    if doc["apiVersion"].split("/")[0].endswith(("cnpg.io", "monitoring.coreos.com", "strimzi.io")):
        schema = {**CRD_SCHEMAS, **STRIMZI_CRDS}.get((doc["apiVersion"], doc["kind"]))
        if schema is None:
            return [f"{name}: no schema of {doc['apiVersion']} {doc['kind']} in deploy/k8s/schemas"]
        errors = [e.message for e in jsonschema.Draft202012Validator(crd_schema(schema)).iter_errors(doc)]
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
    return render(K8S / "overlays" / "production")


def test_every_manifest_of_the_production_overlay_is_valid(production: list[dict[str, Any]]) -> None:
    assert [p for doc in production for p in problems(doc)] == []
    kinds = sorted({d["kind"] for d in production})
    assert kinds == [
        "ConfigMap",
        "Deployment",
        "HorizontalPodAutoscaler",
        "Job",
        "Namespace",  # sluice, Pod Security admission's restricted profile
        "NetworkPolicy",
        "PodDisruptionBudget",
        "PodMonitor",  # each service's /metrics (the Prometheus Operator)
        "PrometheusRule",  # deploy/prometheus/alerts.yml
        "ScaledObject",
        "Service",
        "StatefulSet",  # the three-node Apache Kafka cluster
        "TriggerAuthentication",  # KEDA's SASL login to Kafka
    ]
    gateway = next(
        d
        for d in production
        if d["kind"] == "HorizontalPodAutoscaler" and d["metadata"]["name"] == "sluice-gateway"
    )
    assert gateway["spec"]["minReplicas"] == 3  # the overlay's patch applied
    scaled = [d for d in production if d["kind"] == "ScaledObject"]
    assert all(d["spec"]["maxReplicaCount"] <= GEN.PARTITIONS for d in scaled)


def scanner_findings(docs: list[dict[str, Any]]) -> list[str]:
    """What checkov's Kubernetes checks found in the base on 2026-11-26 (docs/security.md,
    "Kubernetes manifests and checkov"), checked without checkov (``make lint`` runs checkov
    itself): a resource in the default namespace, a pod without a pod-level security context, a
    secret passed as an environment variable, an image by ``latest`` or by no tag."""
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
    base = render(K8S / "base")
    assert scanner_findings(base) == []
    assert scanner_findings(production) == []
    images = {
        c["image"]
        for d in production
        for c in d.get("spec", {}).get("template", {}).get("spec", {}).get("containers", [])
    }
    # one release for every service and the migration Job (the overlay's images entry)
    assert images == {GEN.IMAGE, GEN.KAFKA_IMAGE}
    mounted = next(d for d in base if d["kind"] == "Deployment")["spec"]["template"]["spec"]
    assert mounted["volumes"][1]["secret"]["secretName"] == GEN.secret_name("gateway")


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
    """The NetworkPolicy admitted anyone to admin, and kept Prometheus (in its own
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
    metrics = [
        r
        for r in gateway["ingress"]
        if {"port": GEN.METRICS_PORTS["gateway"], "protocol": "TCP"} in r.get("ports", [])
    ]
    assert metrics and GEN.MONITORING_NAMESPACE in spaces(metrics[0])
    open_rules = [r for r in gateway["ingress"] if not r.get("from")]
    assert [r["ports"] for r in open_rules] == [
        [{"port": "http", "protocol": "TCP"}]
    ]  # partners: the http port only
    consumers = _policy(production, "sluice-consumers-ingress")
    assert GEN.MONITORING_NAMESPACE in spaces(consumers["ingress"][0])


@pytest.fixture(scope="module")
def cloudnative_pg() -> list[dict[str, Any]]:
    return render(K8S / "overlays" / "cloudnative-pg")


def _one(docs: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    [found] = [d for d in docs if d["kind"] == kind and name in (None, d["metadata"]["name"])]
    return found


def test_every_manifest_of_the_cloudnative_pg_overlay_is_valid(cloudnative_pg: list[dict[str, Any]]) -> None:
    """A three-instance Cluster with one synchronous standby, the services' roles
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
    assert _one(cloudnative_pg, "HorizontalPodAutoscaler", "sluice-gateway")["spec"]["minReplicas"] == 3
    production_kinds = {d["kind"] for d in render(K8S / "overlays" / "production")}
    added = {d["kind"] for d in cloudnative_pg} - production_kinds
    assert added == {"Cluster", "ObjectStore", "ScheduledBackup"}  # the database and its backups


def test_the_base_names_the_database_endpoint_it_expects() -> None:
    database = _one(render(K8S / "base"), "Service", GEN.DATABASE_SERVICE)
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


BACKUPS_MD = Path(__file__).resolve().parents[2] / "docs" / "operations" / "backups.md"


def _secret_refs(node: Any) -> list[Any]:
    """Every credential of an ObjectStore's configuration that is not a reference to a key of a
    Secret (``{name, key}``) or a flag (``inheritFromIAMRole``): what would be a secret inline."""
    if isinstance(node, bool):
        return []
    if isinstance(node, dict) and set(node) == {"name", "key"}:
        return []
    if isinstance(node, dict):
        return [x for v in node.values() for x in _secret_refs(v)]
    return [node]


def test_the_cluster_archives_its_wal_and_takes_a_daily_base_backup(
    cloudnative_pg: list[dict[str, Any]],
) -> None:
    """Backups (docs/operations/backups.md): WAL archived continuously and base backups taken
    daily to an object store through the Barman Cloud plugin (not the deprecated in-tree
    spec.backup.barmanObjectStore), kept for a recovery window, with the store's credentials
    from a Secret; the figures are the ones backups.md gives."""
    doc = BACKUPS_MD.read_text()
    cluster = _one(cloudnative_pg, "Cluster")
    store = _one(cloudnative_pg, "ObjectStore")
    daily = _one(cloudnative_pg, "ScheduledBackup")
    spec, name = cluster["spec"], cluster["metadata"]["name"]
    # the Cluster archives through the plugin, into this ObjectStore, in its own namespace
    [archiver] = [p for p in spec["plugins"] if p.get("isWALArchiver")]
    assert archiver["name"] == BARMAN_CLOUD and archiver.get("enabled", True)
    assert archiver["parameters"] == {"barmanObjectName": store["metadata"]["name"]}
    assert store["metadata"]["namespace"] == cluster["metadata"]["namespace"]
    assert "barmanObjectStore" not in spec.get("backup", {})
    # serverName is the plugin's parameter, never the store's (a CEL rule, not evaluated here);
    # unset, the archive's folder is the Cluster's name, which the restore example names
    assert "serverName" not in store["spec"]["configuration"]
    timeout = re.search(r"^\| `archive_timeout` \| `(\w+)` \|", doc, re.M)
    assert timeout and spec["postgresql"]["parameters"]["archive_timeout"] == timeout[1]
    # daily base backups through the plugin, the first one at once
    assert "**Daily** base backups" in doc
    assert daily["spec"]["cluster"]["name"] == name
    assert (daily["spec"]["method"], daily["spec"]["pluginConfiguration"]) == (
        "plugin",
        {"name": BARMAN_CLOUD},
    )
    second, minute, hour, *every = daily["spec"]["schedule"].split()
    assert all(f.isdigit() for f in (second, minute, hour)) and every == ["*", "*", "*"]
    assert daily["spec"]["immediate"] is True and not daily["spec"].get("suspend")
    # a recovery window of at least the 14 days backups.md calls common (many daily backups)
    window = re.fullmatch(r"([1-9][0-9]*)([dwm])", store["spec"]["retentionPolicy"])
    assert window and int(window[1]) * {"d": 1, "w": 7, "m": 30}[window[2]] >= 14
    # credentials by reference only, and no Secret written in the manifests
    config = store["spec"]["configuration"]
    credentials = {k: v for k, v in config.items() if k.endswith("Credentials")}
    assert credentials and _secret_refs(credentials) == []
    assert not [d for d in cloudnative_pg if d["kind"] == "Secret"]
    # encrypted at rest by the store
    assert config["wal"]["encryption"] and config["data"]["encryption"]


def restore_example() -> list[dict[str, Any]]:
    """The manifests of overlays/cloudnative-pg/restore-example.yaml, uncommented as its header
    says: every line after the scissors line, less its leading "# "."""
    text = (CNPG_OVERLAY / "restore-example.yaml").read_text()
    _, manifest = text.split("# 8<", 1)
    lines = manifest.splitlines()[1:]
    assert all(line == "#" or line.startswith("# ") for line in lines)
    return [d for d in yaml.safe_load_all("\n".join(line[2:] for line in lines)) if d]


def _within(part: Any, whole: Any) -> bool:
    """Whether every field of ``part`` is in ``whole`` with the same value."""
    if isinstance(part, dict):
        return isinstance(whole, dict) and all(k in whole and _within(v, whole[k]) for k, v in part.items())
    if isinstance(part, list):
        return isinstance(whole, list) and len(part) == len(whole) and all(map(_within, part, whole))
    return bool(part == whole)


def test_the_restore_example_is_a_point_in_time_restore_of_the_cluster(
    cloudnative_pg: list[dict[str, Any]],
) -> None:
    """The commented restore example: a new Cluster bootstrapped from the ObjectStore's
    backups of sluice-pg to a targetTime, otherwise sluice-pg's spec, backed up from its start;
    valid against the same schemas, and the one docs/operations/backups.md shows."""
    docs = restore_example()
    assert [p for doc in docs for p in problems(doc)] == []
    restore, daily = _one(docs, "Cluster"), _one(docs, "ScheduledBackup")
    cluster, store = _one(cloudnative_pg, "Cluster"), _one(cloudnative_pg, "ObjectStore")
    name = cluster["metadata"]["name"]
    assert restore["metadata"]["name"] != name  # never in place
    assert not [d for d in cloudnative_pg if d["metadata"]["name"] == restore["metadata"]["name"]]
    spec = restore["spec"]
    assert list(spec["bootstrap"]) == ["recovery"]
    recovery = spec["bootstrap"]["recovery"]
    [source] = [c for c in spec["externalClusters"] if c["name"] == recovery["source"]]
    assert source["plugin"]["name"] == BARMAN_CLOUD
    assert source["plugin"]["parameters"] == {
        "barmanObjectName": store["metadata"]["name"],
        "serverName": name,
    }
    target = datetime.fromisoformat(recovery["recoveryTarget"]["targetTime"])
    assert target.tzinfo is not None  # without a zone the operator reads UTC
    initdb = cluster["spec"]["bootstrap"]["initdb"]
    assert (recovery["database"], recovery["owner"], recovery["secret"]) == (
        initdb["database"],
        initdb["owner"],
        initdb["secret"],
    )
    rest = lambda s: {k: v for k, v in s.items() if k not in ("bootstrap", "externalClusters")}  # noqa: E731
    assert rest(spec) == rest(cluster["spec"])  # the same cluster, archiving as it does
    overlay_daily = _one(cloudnative_pg, "ScheduledBackup")
    assert daily["spec"] == {**overlay_daily["spec"], "cluster": {"name": restore["metadata"]["name"]}}
    # backups.md shows this manifest (abbreviated: every field it shows is the example's)
    section = BACKUPS_MD.read_text().split("## On Kubernetes with CloudNativePG", 1)[1]
    shown = [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", section, re.S)]
    assert shown and all(s["kind"] != "Cluster" or _within(s, restore) for s in shown)
    assert any(s["kind"] == "Cluster" and "recovery" in s["spec"]["bootstrap"] for s in shown)


@pytest.mark.parametrize(
    "breakage",
    [
        "schedule missing",
        "unknown backup method",
        "unknown field in the ScheduledBackup",
        "secret inline",
        "retention in words",
        "unknown compression",
        "unknown field in the ObjectStore",
        "plugin without a name",
        "restore target misspelled",
        "a kind without a schema",
    ],
)
def test_the_backup_schemas_refuse_a_broken_manifest(
    cloudnative_pg: list[dict[str, Any]], breakage: str
) -> None:
    daily = copy.deepcopy(_one(cloudnative_pg, "ScheduledBackup"))
    store = copy.deepcopy(_one(cloudnative_pg, "ObjectStore"))
    cluster = copy.deepcopy(_one(cloudnative_pg, "Cluster"))
    restore = copy.deepcopy(_one(restore_example(), "Cluster"))
    assert [p for d in (daily, store, cluster, restore) for p in problems(d)] == []
    config = store["spec"]["configuration"]
    if breakage == "schedule missing":
        broken = daily
        del daily["spec"]["schedule"]
    elif breakage == "unknown backup method":
        broken = daily
        daily["spec"]["method"] = "barmanCloud"
    elif breakage == "unknown field in the ScheduledBackup":
        broken = daily
        daily["spec"]["pluginConfig"] = daily["spec"].pop("pluginConfiguration")
    elif breakage == "secret inline":
        broken = store
        config["s3Credentials"]["secretAccessKey"] = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    elif breakage == "retention in words":
        broken = store
        store["spec"]["retentionPolicy"] = "30 days"
    elif breakage == "unknown compression":
        broken = store
        config["data"]["compression"] = "zstd"  # WAL may be zstd, base backups not
    elif breakage == "unknown field in the ObjectStore":
        broken = store
        config["destinationpath"] = config.pop("destinationPath")
    elif breakage == "plugin without a name":
        broken = cluster
        del cluster["spec"]["plugins"][0]["name"]
    elif breakage == "restore target misspelled":
        broken = restore
        target = restore["spec"]["bootstrap"]["recovery"]["recoveryTarget"]
        target["targetTimestamp"] = target.pop("targetTime")
    else:
        broken = {**daily, "kind": "Pooler"}
    assert problems(broken) != []

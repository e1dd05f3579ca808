"""deploy/k8s (contract 13.6): every manifest of the production overlay validates against a
pinned Kubernetes version (kubernetes-validate, strict), the KEDA ScaledObjects against the
schema kept in deploy/k8s/schemas; every Deployment has probes, limits and a non-root
read-only security context; the base on disk is what the generator writes."""

from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

pytestmark = pytest.mark.unit

K8S = Path(__file__).resolve().parents[2] / "deploy" / "k8s"
KUBERNETES_VERSION = "1.33.0"


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("k8s_generate", K8S / "generate.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


GEN = _generator()


def problems(doc: dict[str, Any]) -> list[str]:
    """What a platform team would refuse in one resource."""
    name = f"{doc['kind']}/{doc['metadata']['name']}"
    if doc["kind"] == "ScaledObject":
        schema = json.loads((K8S / "schemas" / "keda-scaledobject.json").read_text())
        errors = [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(doc)]
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
        "NetworkPolicy",
        "PodDisruptionBudget",
        "ScaledObject",
        "Service",
        "StatefulSet",  # the three-node Apache Kafka cluster (issue 34)
    ]
    gateway = next(
        d for d in production if d["kind"] == "Deployment" and d["metadata"]["name"] == "sluice-gateway"
    )
    assert gateway["spec"]["replicas"] == 3  # the overlay's patch applied
    scaled = [d for d in production if d["kind"] == "ScaledObject"]
    assert {d["spec"]["maxReplicaCount"] for d in scaled} == {GEN.PARTITIONS}


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

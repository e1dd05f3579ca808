"""``kubectl apply --dry-run=server`` of the base and every overlay against a real API server.

What a server checks that the schema tests (tests/unit/test_k8s_manifests.py) cannot: every
built-in kind's own validation (the API server's, not a copy of its schema), the custom
resources against CRDs made from the schemas deploy/k8s/schemas keeps (their CEL rules
evaluated too, which the tests do not), strict field validation (an unknown field is an error,
not a warning), and Pod Security admission ``restricted``: the workloads are applied as they
are (a violation is a warning, which fails the run) and each pod template once more as a Pod
(a violation is refused).

Each of base, production, cloudnative-pg and strimzi is rendered by the kustomize built into kubectl (what
``kubectl apply -k`` of a deployment applies), the overlays with deploy/k8s/lint-inputs.env as
their inputs.env, and that render must equal ``generate.py render``'s (what ``make lint`` checks).
"""

from __future__ import annotations

import copy
import importlib.util
import json
import shutil
import subprocess  # the tools start local processes  # nosec B404
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tools.k8s.apiserver import KUBECTL, ApiServer
from tools.stack import etcd

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
LINT_INPUTS = K8S / "lint-inputs.env"
TARGETS = ("base", "production", "cloudnative-pg", "strimzi")
WORKLOADS = ("Deployment", "StatefulSet", "Job")
# schema file: (group, version, kind, plural), every one namespaced. The two KEDA schemas kept
# there are JSON Schema written for the unit tests (const, additionalProperties false), which
# no CRD accepts: KEDA's own CRDs come from its release's Go module instead (keda_crds).
CRDS = {
    "cnpg-cluster.json": ("postgresql.cnpg.io", "v1", "Cluster", "clusters"),
    "cnpg-scheduledbackup.json": ("postgresql.cnpg.io", "v1", "ScheduledBackup", "scheduledbackups"),
    "barman-cloud-objectstore.json": ("barmancloud.cnpg.io", "v1", "ObjectStore", "objectstores"),
    "prometheus-operator-podmonitors.json": ("monitoring.coreos.com", "v1", "PodMonitor", "podmonitors"),
    "prometheus-operator-prometheusrules.json": (
        "monitoring.coreos.com",
        "v1",
        "PrometheusRule",
        "prometheusrules",
    ),
}


def crd(schema_file: str) -> dict[str, Any]:
    """The CustomResourceDefinition serving one kept schema (its ``$comment``, where it came
    from, is no schema keyword a CRD accepts)."""
    group, version, kind, plural = CRDS[schema_file]
    schema = {
        k: v for k, v in json.loads((K8S / "schemas" / schema_file).read_text()).items() if k != "$comment"
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": f"{kind}List"},
            "versions": [
                {"name": version, "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}
            ],
        },
    }


# Strimzi's CRDs as its release ships them (descriptions removed: deploy/k8s/schemas/strimzi)
STRIMZI_CRDS = K8S / "schemas" / "strimzi"


def strimzi_crds() -> list[dict[str, Any]]:
    """Strimzi's Kafka, KafkaNodePool, KafkaTopic and KafkaUser CRDs, kept whole (CEL rules,
    subresources), which the strimzi overlay's resources are applied against."""
    return [yaml.safe_load(p.read_text()) for p in sorted(STRIMZI_CRDS.glob("*.yaml"))]


KEDA_MODULE, KEDA_VERSION = "github.com/kedacore/keda/v2", "2.16.1"
KEDA_CRDS = ("keda.sh_scaledobjects.yaml", "keda.sh_triggerauthentications.yaml")


def keda_crds() -> list[dict[str, Any]]:
    """KEDA's ScaledObject and TriggerAuthentication CRDs as its release ships them
    (config/crd/bases), from the module the Go module proxy serves (cached by go)."""
    toolchain = etcd.go()
    if toolchain is None:
        raise RuntimeError(f"no go to fetch KEDA {KEDA_VERSION}'s CRDs")
    done = subprocess.run(  # nosec B603
        [toolchain, "mod", "download", "-json", f"{KEDA_MODULE}@v{KEDA_VERSION}"],
        capture_output=True,
        text=True,
        check=False,
        cwd=tempfile.gettempdir(),
    )
    if done.returncode != 0:
        raise RuntimeError(
            f"go could not fetch {KEDA_MODULE}@v{KEDA_VERSION}: {done.stdout.strip()} {done.stderr.strip()}"
        )
    bases = Path(json.loads(done.stdout)["Dir"]) / "config" / "crd" / "bases"
    return [yaml.safe_load((bases / name).read_text()) for name in KEDA_CRDS]


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("k8s_generate", K8S / "generate.py")
    assert spec is not None and spec.loader is not None  # nosec B101: a file of this checkout
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def render_generate(target: str) -> list[dict[str, Any]]:
    directory = K8S / "base" if target == "base" else K8S / "overlays" / target
    docs: list[dict[str, Any]] = _generator().render(directory, LINT_INPUTS)
    return docs


def render_kustomize(target: str, work: Path) -> list[dict[str, Any]]:
    """kubectl's kustomize on a copy of deploy/k8s whose overlays have the lint inputs."""
    tree = work / "k8s"
    if not tree.exists():
        shutil.copytree(K8S, tree, ignore=shutil.ignore_patterns("schemas", "*.py", "__pycache__"))
        shutil.copy(LINT_INPUTS, tree / "overlays" / "production" / "inputs.env")
    directory = tree / "base" if target == "base" else tree / "overlays" / target
    done = subprocess.run([KUBECTL, "kustomize", str(directory)], capture_output=True, text=True, check=False)  # nosec B603
    if done.returncode != 0:
        raise RuntimeError(f"kubectl kustomize {target}: {done.stderr.strip()}")
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def pods_of(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each workload's pod template as the Pod its controller would create, a StatefulSet's
    with its claims' volumes (Pod Security's ``enforce`` refuses pods, and only warns about
    their controllers)."""
    pods = []
    for d in docs:
        if d["kind"] not in WORKLOADS:
            continue
        template = copy.deepcopy(d["spec"]["template"])
        meta = {**template.get("metadata", {}), "name": f"{d['kind'].lower()}-{d['metadata']['name']}"}
        meta["namespace"] = d["metadata"].get("namespace", "sluice")
        spec = template["spec"]
        for claim in d["spec"].get("volumeClaimTemplates", []):  # as the StatefulSet's pod 0 has them
            name = claim["metadata"]["name"]
            pvc = {"claimName": f"{name}-{d['metadata']['name']}-0"}
            spec.setdefault("volumes", []).append({"name": name, "persistentVolumeClaim": pvc})
        pods.append({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})
    return pods


@dataclass
class Outcome:
    """One ``kubectl apply --dry-run=server``: what the server accepted, refused, warned of."""

    name: str
    accepted: int = 0
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return self.accepted > 0 and not self.errors and not self.warnings

    def line(self) -> str:
        verdict = "passes" if self.clean else "FAILS"
        counts = (
            f"{self.accepted} objects accepted, {len(self.errors)} error lines, {len(self.warnings)} warnings"
        )
        return f"{self.name}: {verdict}: {counts}"


def dry_run(server: ApiServer, name: str, docs: list[dict[str, Any]]) -> Outcome:
    done = server.kubectl(
        "apply",
        "--dry-run=server",
        "--validate=strict",
        "-f",
        "-",
        stdin=yaml.safe_dump_all(docs, sort_keys=False),
    )
    out = Outcome(name, accepted=sum(1 for x in done.stdout.splitlines() if x.endswith("(server dry run)")))
    for x in done.stderr.splitlines():
        (out.warnings if x.startswith("Warning:") else out.errors).append(x)
    if done.returncode != 0 and not out.errors:
        out.errors.append(f"kubectl exited {done.returncode}")
    return out


def prepare(server: ApiServer, namespace: dict[str, Any]) -> None:
    """The CRDs installed and established, and the namespace created for real (a dry run of a
    namespaced object needs its namespace), with the labels the base gives it, and its default
    service account."""
    crds = [crd(f) for f in CRDS] + keda_crds() + strimzi_crds()
    # A Pod's admission looks its service account up; the pods here use their namespace's
    # default one, which a cluster's controller manager creates (none runs here).
    default_account = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "default", "namespace": namespace["metadata"]["name"]},
    }
    for step in (
        server.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(crds)),
        server.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd", "--all"),
        server.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(namespace)),
        server.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(default_account)),
    ):
        if step.returncode != 0:
            raise RuntimeError(f"preparing the server: {step.stderr.strip()}")


def same_render(target: str, ours: list[dict[str, Any]], kustomize: list[dict[str, Any]]) -> Outcome:
    """generate.py's render and kustomize's, object by object (kind and name): the one make lint
    checks must be the one an operator applies."""
    mine = {(d["kind"], d["metadata"]["name"]): d for d in ours}
    theirs = {(d["kind"], d["metadata"]["name"]): d for d in kustomize}
    out = Outcome(f"{target}: generate.py render == kustomize", accepted=len(mine))
    out.errors = [
        f"{k[0]}/{k[1]} differs" for k in sorted(mine.keys() | theirs.keys()) if mine.get(k) != theirs.get(k)
    ]
    return out


def run(work: Path) -> list[Outcome]:
    """Every target: its two renders compared, then applied, then its pods: an Outcome each."""
    cluster = etcd.single_node(work)
    server = ApiServer(work / "apiserver", f"http://{cluster.hosts[0]}")
    try:
        server.start().wait_ready()
        base = render_generate("base")
        prepare(server, next(d for d in base if d["kind"] == "Namespace"))
        outcomes = []
        for target in TARGETS:
            docs = render_kustomize(target, work)
            outcomes.append(same_render(target, render_generate(target), docs))
            outcomes.append(dry_run(server, target, docs))
            outcomes.append(dry_run(server, f"{target}: pods of its workloads", pods_of(docs)))
        return outcomes
    finally:
        server.stop()
        cluster.stop()


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="sluice-k8s-dry-run-") as tmp:
        outcomes = run(Path(tmp))
    for o in outcomes:
        print(o.line())
        for x in o.errors + o.warnings:
            print(f"  {x}")
    return 0 if all(o.clean for o in outcomes) else 1

"""deploy/k8s across releases (docs/operations/upgrade.md): every Job of the rendered overlays can
be applied again by the next release and goes away on its own. A Job's pod template cannot be
changed once created, so the next release's `kubectl apply` of a Job of the same name fails: each
release's Jobs are named after it, are deleted a day after they finish, are bounded in time and
restarts, and run before the Deployments roll (Argo CD: Sync hooks in earlier sync waves, replaced
at each sync; kubectl: the two-step apply of docs/operations/upgrade.md, whose selectors are
checked here against the manifests). Every `job/<name>` the operations pages tell you to wait on is
a Job of the overlays, and every file they tell you to apply exists (or their commands write it)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.support.k8s import generator, render

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
GEN = generator()
OVERLAYS = ("production", "cloudnative-pg", "strimzi")
SERVERS = ("Deployment", "HorizontalPodAutoscaler", "ScaledObject")
RELEASE = re.sub(r"[^a-z0-9]+", "-", GEN.VERSION.lower()).strip("-")  # 0.1.0 -> 0-1-0


@pytest.fixture(scope="module", params=OVERLAYS)
def docs(request: pytest.FixtureRequest) -> list[dict[str, Any]]:
    return render(K8S / "overlays" / request.param)


def _wave(doc: dict[str, Any]) -> int:
    return int(doc["metadata"].get("annotations", {}).get("argocd.argoproj.io/sync-wave", "0"))


def job_problems(docs: list[dict[str, Any]]) -> list[str]:
    """What stops the next release's apply, or leaves a Job behind, or runs it after the pods."""
    out = []
    servers = [d for d in docs if d["kind"] in SERVERS]
    first_server = min(_wave(d) for d in servers)
    for doc in (d for d in docs if d["kind"] == "Job"):
        meta, spec = doc["metadata"], doc["spec"]
        name, notes = meta["name"], meta.get("annotations", {})
        if not name.endswith("-" + RELEASE):
            out.append(f"{name}: not named after its release: the next release's apply is refused")
        if not isinstance(spec.get("ttlSecondsAfterFinished"), int):
            out.append(f"{name}: no ttlSecondsAfterFinished: it stays after it finished")
        if not isinstance(spec.get("backoffLimit"), int) or not spec.get("activeDeadlineSeconds"):
            out.append(f"{name}: needs backoffLimit and activeDeadlineSeconds")
        if notes.get("argocd.argoproj.io/hook") != "Sync":
            out.append(f"{name}: not an Argo CD Sync hook")
        if notes.get("argocd.argoproj.io/hook-delete-policy") != "BeforeHookCreation":
            out.append(f"{name}: Argo CD keeps the last sync's Job (hook-delete-policy)")
        if _wave(doc) >= first_server:
            out.append(f"{name}: wave {_wave(doc)} is not before the Deployments' ({first_server})")
        if meta["labels"].get("app.kubernetes.io/component") != "release-job":
            out.append(f"{name}: `kubectl wait -l app.kubernetes.io/component=release-job` misses it")
    for doc in servers:
        if doc["metadata"]["labels"].get("app.kubernetes.io/component") != "server":
            out.append(f"{doc['metadata']['name']}: the first step of a kubectl upgrade would roll it")
    return out


def test_every_job_can_be_applied_by_the_next_release(docs: list[dict[str, Any]]) -> None:
    jobs = {d["metadata"]["labels"]["app.kubernetes.io/name"] for d in docs if d["kind"] == "Job"}
    strimzi = any(d["kind"] == "Kafka" for d in docs)  # its operators make the credentials, ACLs, topics
    assert jobs == {"migrate"} | (set() if strimzi else {"kafka-scram", "kafka-acls"})
    assert job_problems(docs) == []


def test_the_job_check_fails_on_last_releases_jobs(docs: list[dict[str, Any]]) -> None:
    """A Job as the manifests had it before: one name for every release, no TTL, PreSync."""
    old = [dict(d) for d in docs]
    i = next(i for i, d in enumerate(old) if d["kind"] == "Job")
    meta = {
        **old[i]["metadata"],
        "name": "sluice-migrate",
        "annotations": {"argocd.argoproj.io/hook": "PreSync"},
    }
    spec = {k: v for k, v in old[i]["spec"].items() if k != "ttlSecondsAfterFinished"}
    old[i] = {**old[i], "metadata": meta, "spec": spec}
    found = job_problems(old)
    assert any("not named after its release" in p for p in found)
    assert any("ttlSecondsAfterFinished" in p for p in found)
    assert any("not an Argo CD Sync hook" in p for p in found)


def test_the_next_release_names_new_jobs() -> None:
    assert GEN.job_name("migrate", "0.1.0") == "sluice-migrate-0-1-0"
    assert GEN.job_name("migrate", "0.2.0rc1") != GEN.job_name("migrate", "0.1.0")


def test_the_operations_pages_name_jobs_and_files_that_exist() -> None:
    jobs = {
        d["metadata"]["name"] for o in OVERLAYS for d in render(K8S / "overlays" / o) if d["kind"] == "Job"
    }
    pages = [ROOT / "docs" / "operations.md", *sorted((ROOT / "docs" / "operations").glob("*.md"))]
    for page in pages:
        text = page.read_text()
        for name in re.findall(r"\bjob/(sluice-[a-z0-9-]+)", text):
            assert name in jobs, f"{page.name}: job/{name} is no Job of the overlays ({sorted(jobs)})"
        for path in re.findall(r"kubectl apply -f ([\w./-]+)", text):
            written = f"> {path}" in text  # a file the page's own commands write first
            assert written or (ROOT / path).exists(), f"{page.name}: kubectl apply -f {path}: no such file"

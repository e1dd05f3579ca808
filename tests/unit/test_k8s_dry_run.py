"""The pieces of ``make k8s-dry-run`` (tools/k8s) that need no API server: the wrapper module
that builds kube-apiserver from the Go module proxy, the CRDs made from deploy/k8s/schemas, the
Pods made from the workloads' templates, and the render comparison. The dry run itself is
``make k8s-dry-run`` (docs/operations/deploy.md, "Checked against a real API server")."""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterator

import pytest

from tests.support.k8s import K8S, render
from tools.k8s import apiserver, dryrun

pytestmark = pytest.mark.unit

KUBERNETES_GO_MOD = """module k8s.io/kubernetes

go 1.26.0

require (
\tk8s.io/api v0.0.0
\tgithub.com/spf13/cobra v1.10.0
)

replace (
\tk8s.io/api => ./staging/src/k8s.io/api
\tk8s.io/apiserver => ./staging/src/k8s.io/apiserver
)
"""


def test_the_wrapper_replaces_every_staging_module_with_its_release() -> None:
    mod = apiserver.wrapper_go_mod(KUBERNETES_GO_MOD)
    assert f"require k8s.io/kubernetes v{apiserver.KUBERNETES_VERSION}\n" in mod
    assert f"\tk8s.io/api => k8s.io/api {apiserver.STAGING_VERSION}\n" in mod
    assert f"\tk8s.io/apiserver => k8s.io/apiserver {apiserver.STAGING_VERSION}\n" in mod
    assert "cobra" not in mod and "./staging" not in mod
    minor_patch = apiserver.KUBERNETES_VERSION.split(".", 1)[1]
    assert f"v0.{minor_patch}" == apiserver.STAGING_VERSION


def test_a_go_mod_without_staging_replaces_is_refused_by_name() -> None:
    with pytest.raises(apiserver.ApiServerUnavailable, match="no staging replaces"):
        apiserver.wrapper_go_mod("module k8s.io/kubernetes\n")


@pytest.mark.parametrize("schema_file", sorted(dryrun.CRDS))
def test_every_kept_schema_becomes_a_crd_without_its_comment(schema_file: str) -> None:
    crd = dryrun.crd(schema_file)
    group, version, kind, plural = dryrun.CRDS[schema_file]
    assert crd["metadata"]["name"] == f"{plural}.{group}"
    (served,) = crd["spec"]["versions"]
    assert (served["name"], crd["spec"]["names"]["kind"]) == (version, kind)
    schema = served["schema"]["openAPIV3Schema"]
    assert schema["type"] == "object"
    assert '"$comment"' not in json.dumps(schema)  # no schema keyword a CRD accepts


def test_every_kept_schema_is_installed_but_keda_s_which_its_release_replaces() -> None:
    kept = {p.name for p in (K8S / "schemas").glob("*.json")}
    assert set(dryrun.CRDS) == {n for n in kept if not n.startswith("keda-")}
    assert {n.split("_")[1].split(".")[0] for n in dryrun.KEDA_CRDS} == {
        "scaledobjects",
        "triggerauthentications",
    }


def descriptions(node: object) -> Iterator[str]:
    """Every description text of a schema (a property named description is no such text)."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "description" and isinstance(v, str):
                yield v
            else:
                yield from descriptions(v)
    elif isinstance(node, list):
        for x in node:
            yield from descriptions(x)


def test_strimzi_s_crds_are_installed_whole_for_every_kind_the_strimzi_overlay_uses() -> None:
    crds = {c["spec"]["names"]["kind"]: c for c in dryrun.strimzi_crds()}
    used = {
        d["kind"] for d in render(K8S / "overlays" / "strimzi") if d["apiVersion"] == "kafka.strimzi.io/v1"
    }
    assert set(crds) == used == {"Kafka", "KafkaNodePool", "KafkaTopic", "KafkaUser"}
    for kind, crd in crds.items():
        assert crd["kind"] == "CustomResourceDefinition" and crd["spec"]["group"] == "kafka.strimzi.io"
        (v1,) = crd["spec"]["versions"]
        assert (v1["name"], v1["served"], v1["storage"]) == ("v1", True, True), kind
        assert not list(descriptions(v1["schema"])), kind  # removed: schemas/strimzi/README.md
    assert "strimzi" in dryrun.TARGETS


def test_each_workload_template_becomes_a_pod_in_its_namespace() -> None:
    docs = render(K8S / "overlays" / "production")
    pods = dryrun.pods_of(docs)
    workloads = [d for d in docs if d["kind"] in dryrun.WORKLOADS]
    assert len(pods) == len(workloads) > 0
    for pod, w in zip(pods, workloads, strict=True):
        assert pod["kind"] == "Pod" and pod["metadata"]["namespace"] == "sluice"
        claims = [c["metadata"]["name"] for c in w["spec"].get("volumeClaimTemplates", [])]
        template = w["spec"]["template"]["spec"]
        assert {k: v for k, v in pod["spec"].items() if k != "volumes"} == {
            k: v for k, v in template.items() if k != "volumes"
        }
        added = pod["spec"].get("volumes", [])[len(template.get("volumes", [])) :]
        assert [v["name"] for v in added] == claims
    assert any(d["kind"] == "StatefulSet" and d["spec"].get("volumeClaimTemplates") for d in workloads)


def test_renders_that_differ_fail_naming_the_object() -> None:
    docs = render(K8S / "base")
    changed = json.loads(json.dumps(docs))
    changed[0]["metadata"]["labels"] = {"x": "y"}
    assert dryrun.same_render("base", docs, docs).clean
    out = dryrun.same_render("base", docs, changed)
    assert not out.clean
    assert out.errors == [f"{docs[0]['kind']}/{docs[0]['metadata']['name']} differs"]


@pytest.mark.parametrize(
    "overlay", ["base", "overlays/production", "overlays/cloudnative-pg", "overlays/strimzi"]
)
def test_every_ip_block_is_one_the_api_server_accepts(overlay: str) -> None:
    """kube-apiserver 1.37 refuses an ipBlock (cidr or except) holding an IPv4-mapped IPv6
    block, and an except that is not a strict subset of its cidr, in the same family: the
    webhooks egress policy's ``::ffff:0:0/96`` was refused so by ``make k8s-dry-run``."""
    blocks = [
        peer["ipBlock"]
        for d in render(K8S / overlay)
        if d["kind"] == "NetworkPolicy"
        for rule in d["spec"].get("egress", []) + d["spec"].get("ingress", [])
        for peer in rule.get("to", []) + rule.get("from", [])
        if "ipBlock" in peer
    ]
    assert blocks
    for block in blocks:
        cidr = ipaddress.ip_network(block["cidr"])
        for text in [block["cidr"], *block.get("except", [])]:
            net = ipaddress.ip_network(text)
            assert not (net.version == 6 and net.subnet_of(ipaddress.ip_network("::ffff:0:0/96"))), text
        for text in block.get("except", []):
            net = ipaddress.ip_network(text)
            assert net.version == cidr.version and net != cidr and net.subnet_of(cidr), text  # type: ignore[arg-type]

"""The strimzi overlay (docs/operations/strimzi.md): Kafka run by Strimzi's operators in place of
the base's StatefulSet and Jobs. Every resource validates against Strimzi 1.2.0's own CRD
schemas (deploy/k8s/schemas/strimzi, unknown fields refused); every topic of the topic plan has
its KafkaTopic at three replicas with two in sync, every principal of the ACL plan its KafkaUser
with exactly the plan's grants; the overlay on disk is what deploy/k8s/strimzi.py writes from
those plans; nothing of the base's own Kafka is left, and KEDA logs in as Strimzi gives it to."""

from __future__ import annotations

import copy
import importlib.util
from typing import Any

import pytest

from common import acls
from common.settings import Settings
from common.topics import TOPIC_CONFIGS, Topic, Topics
from tests.support.k8s import K8S, generator, render
from tests.unit.test_k8s_manifests import problems

pytestmark = pytest.mark.unit

GEN = generator()
OVERLAY = K8S / "overlays" / "strimzi"
OPERATIONS = {
    "Read": "READ",
    "Write": "WRITE",
    "Create": "CREATE",
    "Delete": "DELETE",
    "Describe": "DESCRIBE",
}


def strimzi_generator() -> Any:
    spec = importlib.util.spec_from_file_location("k8s_strimzi", K8S / "strimzi.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


STRIMZI = strimzi_generator()


@pytest.fixture(scope="module")
def docs() -> list[dict[str, Any]]:
    return render(OVERLAY)


def _of(docs: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == kind}


def test_every_manifest_of_the_strimzi_overlay_is_valid(docs: list[dict[str, Any]]) -> None:
    assert [p for doc in docs for p in problems(doc)] == []
    strimzi = {d["kind"] for d in docs if d["apiVersion"] == "kafka.strimzi.io/v1"}
    assert strimzi == {"Kafka", "KafkaNodePool", "KafkaTopic", "KafkaUser"}


def test_the_overlay_on_disk_is_what_the_generator_writes_from_the_plans() -> None:
    written = dict(STRIMZI.rendered_files())
    on_disk = {p.name: p.read_text() for p in OVERLAY.iterdir() if p.is_file()}
    assert on_disk == written, "deploy/k8s/overlays/strimzi differs: run python deploy/k8s/strimzi.py"


def test_every_topic_of_the_plan_has_its_kafka_topic_at_three_replicas_two_in_sync(
    docs: list[dict[str, Any]],
) -> None:
    """Each shared topic as `python -m sluice topics` would create it in the production
    overlay: SLUICE_KAFKA_TOPIC_PARTITIONS partitions, three replicas, two in sync, the default
    retention, the journal anchors kept forever; and no other topic."""
    topics, named = _of(docs, "KafkaTopic"), Topics("sluice")
    assert set(topics) == {named[t] for t in Topic}
    retention = str(Settings.model_fields["kafka_retention_ms"].default)
    for topic in Topic:
        doc = topics[named[topic]]
        assert doc["metadata"]["labels"]["strimzi.io/cluster"] == STRIMZI.CLUSTER
        spec = doc["spec"]
        assert (spec["partitions"], spec["replicas"]) == (GEN.PARTITIONS, 3), topic
        assert spec["config"]["min.insync.replicas"] == "2", topic
        want = {"retention.ms": retention, "min.insync.replicas": "2", **TOPIC_CONFIGS.get(topic, {})}
        assert spec["config"] == want, topic
    assert topics[named[Topic.JOURNAL_ANCHORS]]["spec"]["config"]["retention.ms"] == "-1"


def granted(user: dict[str, Any]) -> set[acls.Binding]:
    """A KafkaUser's ACLs as the plan's bindings."""
    out = set()
    principal = f"User:{user['metadata']['name']}"
    for acl in user["spec"]["authorization"]["acls"]:
        assert acl.get("type", "allow") == "allow" and acl.get("host", "*") == "*", acl
        r = acl["resource"]
        pattern = acls.Pattern(r["name"], r.get("patternType", "literal") == "prefix")
        for op in acl["operations"]:
            out.add(acls.Binding(principal, r["type"].upper(), pattern, OPERATIONS[op]))
    return out


def test_every_principal_of_the_acl_plan_has_a_kafka_user_with_exactly_its_grants(
    docs: list[dict[str, Any]],
) -> None:
    plan, users = acls.plan(), _of(docs, "KafkaUser")
    assert {f"User:{name}" for name in users} == set(plan)
    for principal, access in plan.items():
        user = users[principal.removeprefix("User:")]
        assert user["spec"]["authentication"] == {"type": "scram-sha-512"}
        assert user["spec"]["authorization"]["type"] == "simple"
        assert granted(user) == set(acls.bindings({principal: access})), principal
        assert user["metadata"]["labels"]["strimzi.io/cluster"] == STRIMZI.CLUSTER


def test_a_grant_more_or_less_than_the_plan_s_is_seen(docs: list[dict[str, Any]]) -> None:
    user = copy.deepcopy(_of(docs, "KafkaUser")["gateway"])
    plan = set(acls.bindings({"User:gateway": acls.plan()["User:gateway"]}))
    user["spec"]["authorization"]["acls"][0]["operations"].append("Create")
    assert granted(user) != plan
    user = copy.deepcopy(_of(docs, "KafkaUser")["gateway"])
    user["spec"]["authorization"]["acls"].pop()
    assert granted(user) != plan


def test_the_cluster_is_three_kraft_nodes_across_zones_with_the_base_s_replication(
    docs: list[dict[str, Any]],
) -> None:
    (kafka,) = _of(docs, "Kafka").values()
    (pool,) = _of(docs, "KafkaNodePool").values()
    assert pool["metadata"]["labels"]["strimzi.io/cluster"] == kafka["metadata"]["name"] == STRIMZI.CLUSTER
    assert pool["spec"]["replicas"] == 3 and sorted(pool["spec"]["roles"]) == ["broker", "controller"]
    spec = kafka["spec"]["kafka"]
    assert spec["rack"] == {"topologyKey": "topology.kubernetes.io/zone"}
    config = spec["config"]
    assert (config["default.replication.factor"], config["min.insync.replicas"]) == (3, 2)
    assert config["auto.create.topics.enable"] is False
    (listener,) = spec["listeners"]
    assert (listener["port"], listener["tls"], listener["authentication"]) == (
        9093,
        True,
        {"type": "scram-sha-512"},
    )
    assert spec["authorization"]["type"] == "simple"
    operators = kafka["spec"]["entityOperator"]
    assert "topicOperator" in operators
    assert operators["userOperator"]["secretPrefix"] == STRIMZI.USER_SECRET_PREFIX


def test_nothing_of_the_base_s_own_kafka_is_left(docs: list[dict[str, Any]]) -> None:
    """The Topic and User Operators own the topics, credentials and ACLs: no StatefulSet, no
    SCRAM or ACL Job (the ACL Job made the topics), no Service or budget of the old brokers."""
    assert not [d for d in docs if d["kind"] == "StatefulSet"]
    jobs = set(_of(docs, "Job"))
    assert jobs == {GEN.job_name("migrate")}
    assert not {"kafka", "kafka-nodes"} & set(_of(docs, "Service"))
    assert "sluice-kafka" not in _of(docs, "PodDisruptionBudget")
    assert "sluice-kafka-ingress" not in _of(docs, "NetworkPolicy")
    (config,) = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "sluice-config"]
    assert config["data"]["SLUICE_KAFKA_BOOTSTRAP"] == "sluice-kafka-kafka-bootstrap:9093"


def test_keda_reads_the_lag_as_its_own_kafka_user_through_the_bootstrap_service(
    docs: list[dict[str, Any]],
) -> None:
    (auth,) = _of(docs, "TriggerAuthentication").values()
    secrets = {r["parameter"]: (r["name"], r["key"]) for r in auth["spec"]["secretTargetRef"]}
    assert secrets == {
        "ca": ("sluice-kafka-cluster-ca-cert", "ca.crt"),
        "password": (f"{STRIMZI.USER_SECRET_PREFIX}{acls.SCALER}", "password"),
    }
    config = _of(docs, "ConfigMap")[STRIMZI.KEDA_CONFIG]["data"]
    values = {r["parameter"]: config[r["key"]] for r in auth["spec"]["configMapTargetRef"]}
    assert values == {"sasl": "scram_sha512", "tls": "enable", "username": acls.SCALER}
    assert acls.SCALER in _of(docs, "KafkaUser")
    for scaled in _of(docs, "ScaledObject").values():
        servers = {t["metadata"]["bootstrapServers"] for t in scaled["spec"]["triggers"]}
        assert servers == {"sluice-kafka-kafka-bootstrap.sluice.svc:9093"}, scaled["metadata"]["name"]


@pytest.mark.parametrize(
    "breakage",
    ["unknown operation", "replicas as text", "unknown listener field", "pool without roles", "no user type"],
)
def test_strimzi_s_schemas_refuse_a_broken_resource(docs: list[dict[str, Any]], breakage: str) -> None:
    kafka = copy.deepcopy(next(iter(_of(docs, "Kafka").values())))
    pool = copy.deepcopy(next(iter(_of(docs, "KafkaNodePool").values())))
    topic = copy.deepcopy(next(iter(_of(docs, "KafkaTopic").values())))
    user = copy.deepcopy(_of(docs, "KafkaUser")["ledger"])
    if breakage == "unknown operation":
        broken = user
        user["spec"]["authorization"]["acls"][0]["operations"] = ["Reed"]
    elif breakage == "replicas as text":
        broken = topic
        topic["spec"]["replicas"] = "3"
    elif breakage == "unknown listener field":
        broken = kafka
        kafka["spec"]["kafka"]["listeners"][0]["authentification"] = {"type": "scram-sha-512"}
    elif breakage == "pool without roles":
        broken = pool
        pool["spec"]["roles"] = ["zookeeper"]
    else:
        broken = user
        del user["spec"]["authentication"]["type"]
    assert problems(broken) != []


def test_no_service_creates_a_shared_topic_the_topic_operator_owns(docs: list[dict[str, Any]]) -> None:
    (config,) = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "sluice-config"]
    assert config["data"]["SLUICE_KAFKA_CREATE_TOPICS"] == "false"
    for d in _of(docs, "Deployment").values():
        for c in d["spec"]["template"]["spec"]["containers"]:
            assert all(e["name"] != "SLUICE_KAFKA_CREATE_TOPICS" for e in c.get("env", [])), d["metadata"]
    shared = {acls.Pattern(name) for name in _of(docs, "KafkaTopic")}
    for user in _of(docs, "KafkaUser").values():
        created = {b.pattern for b in granted(user) if b.operation == "CREATE"}
        assert not created & shared, user["metadata"]["name"]

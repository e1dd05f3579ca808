"""Writes deploy/k8s/overlays/strimzi: the production overlay with Kafka run by the Strimzi
operator (docs/operations/strimzi.md) in place of the base's own StatefulSet, its SCRAM and ACL
Jobs and its topics Job.

What the base does by hand, Strimzi's operators own here: the Cluster Operator runs the
brokers (a ``Kafka`` and its ``KafkaNodePool``), the Topic Operator creates the topics (a
``KafkaTopic`` per topic of the suite's topic plan, ``common.topics.topic_plan``, as ``python -m
sluice topics`` creates them), and the User Operator makes each principal's SCRAM-SHA-512
credential and ACLs (a ``KafkaUser`` per principal of ``common.acls.plan``, with exactly its
grants). Both lists are generated from those plans, never copied: ``python
deploy/k8s/strimzi.py`` writes them, and tests/unit/test_k8s_strimzi.py fails when the files
on disk differ from what it would write.

The services keep their settings loader and their files: the bootstrap becomes Strimzi's
bootstrap Service (the TLS listener), the CA file the cluster CA's ``ca.crt``, and the password
file the ``password`` key of the Secret the User Operator writes for the service's KafkaUser.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
_LIBS = str(HERE.parents[1] / "libs")
if _LIBS not in sys.path:  # run as a script: the plans are libs/common's
    sys.path.insert(0, _LIBS)

from common import acls  # noqa: E402
from common.settings import Settings  # noqa: E402
from common.topics import topic_plan  # noqa: E402


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("k8s_generate", HERE / "generate.py")
    assert spec is not None and spec.loader is not None  # nosec B101: a file of this checkout
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


GEN = _generator()
OVERLAY = HERE / "overlays" / "strimzi"
API = "kafka.strimzi.io/v1"  # Strimzi 1.x serves v1 alone (deploy/k8s/schemas/strimzi)
STRIMZI_VERSION = "1.2.0"  # the operator whose CRDs deploy/k8s/schemas/strimzi keeps
# The 4.2 line's latest, the nearest to the suite's 4.1.2 of the releases Strimzi 1.2.0 runs
# (4.2.0 to 4.3.1): Strimzi 1.1 and later run no 4.1 (docs/operations/strimzi.md).
KAFKA_VERSION = "4.2.1"
METADATA_VERSION = "4.2-IV1"  # that release's (Strimzi's kafka-versions.yaml)
CLUSTER = "sluice-kafka"
POOL = "nodes"  # the pods: sluice-kafka-nodes-0, -1, -2
STRIMZI_NAMESPACE = "strimzi"  # where the Cluster Operator runs (its pods: strimzi.io/kind=cluster-operator)
# The clients' listener: TLS, so that no password crosses the network in clear, with
# SCRAM-SHA-512 as the services already log in (generate.KAFKA_SASL: SASL_SSL); 9093 is
# Strimzi's usual port for its internal TLS listener.
LISTENER = "tls"
CLIENT_PORT = 9093
# Strimzi's own ports on every node: the KRaft control plane, replication (brokers, the
# Cluster and Entity Operators), the Kafka agent (the Cluster Operator, during rolls).
STRIMZI_PORTS = {"controlplane": 9090, "replication": 9091, "agent": 8443}
BOOTSTRAP = f"{CLUSTER}-kafka-bootstrap"  # the Service Strimzi makes for the listeners
CLUSTER_CA_SECRET = f"{CLUSTER}-cluster-ca-cert"  # its ca.crt signs every broker's certificate
USER_SECRET_PREFIX = "sluice-kafka-user-"  # the User Operator's Secret of KafkaUser x: <prefix>x
KEDA_CONFIG = "sluice-keda-kafka"  # KEDA's non-secret login parameters (a ConfigMap)
# Pod labels that Strimzi gives the nodes of this cluster (its NetworkPolicy selects them so)
BROKER_LABELS = {
    "strimzi.io/cluster": CLUSTER,
    "strimzi.io/kind": "Kafka",
    "strimzi.io/name": f"{CLUSTER}-kafka",
}
ENTITY_OPERATOR = f"{CLUSTER}-entity-operator"  # the Topic and User Operators' pod
OPERATIONS = {op: op.capitalize() for op in ("READ", "WRITE", "CREATE", "DELETE", "DESCRIBE")}


def user_secret(principal: str) -> str:
    """The Secret the User Operator writes for ``principal``'s KafkaUser (key ``password``)."""
    return f"{USER_SECRET_PREFIX}{principal}"


def _meta(name: str, cluster: bool = True) -> dict[str, Any]:
    labels = {**GEN.LABELS, **({"strimzi.io/cluster": CLUSTER} if cluster else {})}
    return {"name": name, "namespace": GEN.NAMESPACE, "labels": labels}


def _resource(kind: str, name: str, spec: dict[str, Any], cluster: bool = True) -> dict[str, Any]:
    return {"apiVersion": API, "kind": kind, "metadata": _meta(name, cluster), "spec": spec}


def client_peers() -> list[dict[str, Any]]:
    """Who may reach the clients' listener: the suite's pods and KEDA's operator (its lag
    scaler), as the base lets them reach its own brokers."""
    suite = {"podSelector": {"matchLabels": dict(GEN.LABELS)}}
    return [suite, GEN._from_namespace(GEN.KEDA_NAMESPACE)]


def kafka_cluster() -> dict[str, Any]:
    """The cluster: KRaft (Strimzi 1.x runs nothing else) on the node pool, every client on one
    TLS listener with SCRAM-SHA-512, ACLs enforced (the User Operator's), brokers told their
    zone (rack awareness: a topic's three replicas land in three zones where there are three),
    and the base's replication defaults: three replicas, two in sync."""
    listener = {
        "name": LISTENER,
        "port": CLIENT_PORT,
        "type": "internal",
        "tls": True,
        "authentication": {"type": "scram-sha-512"},
        # Strimzi's own NetworkPolicy opens a listener to everyone unless given its peers
        "networkPolicyPeers": client_peers(),
    }
    config = {
        "default.replication.factor": 3,
        "min.insync.replicas": 2,
        "offsets.topic.replication.factor": 3,
        "transaction.state.log.replication.factor": 3,
        "transaction.state.log.min.isr": 2,
        "num.partitions": GEN.PARTITIONS,
        "auto.create.topics.enable": False,  # the Topic Operator creates them
    }
    operator = {
        "resources": {
            "requests": {"cpu": "100m", "memory": "256Mi"},
            "limits": {"cpu": "500m", "memory": "512Mi"},
        }
    }
    spec = {
        "kafka": {
            "version": KAFKA_VERSION,
            "metadataVersion": METADATA_VERSION,
            "listeners": [listener],
            "authorization": {"type": "simple"},
            "rack": {"topologyKey": "topology.kubernetes.io/zone"},
            "config": config,
        },
        "entityOperator": {
            "topicOperator": operator,
            "userOperator": {**operator, "secretPrefix": USER_SECRET_PREFIX},
        },
    }
    return _resource("Kafka", CLUSTER, spec, cluster=False)


def node_pool() -> dict[str, Any]:
    """Three nodes, each a broker and a KRaft controller (a quorum of three survives one
    lost), spread over nodes and zones as the base spreads its own, with the base's storage
    and the base broker's requests and limits."""
    selector = {"matchLabels": {"strimzi.io/cluster": CLUSTER, "strimzi.io/pool-name": POOL}}
    # the base's spread (hostname: DoNotSchedule, zone: ScheduleAnyway) over this pool's pods
    spread = [{**c, "labelSelector": selector} for c in GEN._spread("kafka")]
    volume = {"id": 0, "type": "persistent-claim", "size": "20Gi", "deleteClaim": False}
    spec = {
        "replicas": GEN.KAFKA_NODES,
        "roles": ["controller", "broker"],
        "storage": {"type": "jbod", "volumes": [{**volume, "kraftMetadata": "shared"}]},
        "resources": {
            "requests": {"cpu": "250m", "memory": "768Mi"},
            "limits": {"cpu": "2", "memory": "1536Mi"},
        },
        "template": {"pod": {"topologySpreadConstraints": spread}},
    }
    return _resource("KafkaNodePool", POOL, spec)


def plan_settings() -> Settings:
    """The settings the topics are planned with: the base ConfigMap's Kafka settings (replication
    3, two in sync, the partitions) over the defaults (retention), as a pod reads them; this
    process's own environment is not read."""
    (config,) = GEN.base()["config.yaml"]
    pod_env = {k: v for k, v in config["data"].items() if k.startswith(("SLUICE_KAFKA_", "SLUICE_TOPIC_"))}
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(pod_env)
    try:
        return Settings()
    finally:
        os.environ.clear()
        os.environ.update(saved)


def kafka_topics() -> list[dict[str, Any]]:
    """A KafkaTopic per topic of the plan: its partitions, replicas and configs (retention,
    min.insync.replicas, the journal anchors' keep-forever) as ``python -m sluice topics``
    would create it."""
    return [
        _resource(
            "KafkaTopic",
            t.name,
            {"partitions": t.partitions, "replicas": t.replication_factor, "config": dict(t.configs)},
        )
        for t in topic_plan(plan_settings())
    ]


def acl_entries(access: acls.Access) -> list[dict[str, Any]]:
    """``access`` as Strimzi's simple-authorization ACLs: one entry per resource pattern, its
    operations together, from any host."""
    ops: dict[tuple[str, str, bool], list[str]] = {}
    for b in acls.bindings({access.principal: access}):
        ops.setdefault((b.resource.lower(), b.pattern.name, b.pattern.prefixed), []).append(
            OPERATIONS[b.operation]
        )
    return [
        {
            "resource": {"type": kind, "name": name, "patternType": "prefix" if prefixed else "literal"},
            "operations": sorted(set(names)),
            "host": "*",
        }
        for (kind, name, prefixed), names in sorted(ops.items())
    ]


def kafka_users() -> list[dict[str, Any]]:
    """A KafkaUser per principal of the ACL plan (each service's and KEDA's), named as the
    principal (``User:<name>``), a SCRAM-SHA-512 credential the User Operator generates."""
    out = []
    for principal, access in acls.plan().items():
        name = principal.removeprefix("User:")
        spec = {
            "authentication": {"type": "scram-sha-512"},
            "authorization": {"type": "simple", "acls": acl_entries(access)},
        }
        out.append(_resource("KafkaUser", name, spec))
    return out


def _peer(labels: dict[str, str], namespace: str | None = None) -> dict[str, Any]:
    peer: dict[str, Any] = {"podSelector": {"matchLabels": labels}}
    return {**GEN._from_namespace(namespace), **peer} if namespace else peer


def broker_policy() -> dict[str, Any]:
    """Who may reach the nodes: the clients on the TLS listener (client_peers), and Strimzi's
    own flows as its Cluster Operator's policy for them allows (the nodes among themselves on
    the control plane and replication, the Cluster Operator on all three of its ports, the
    Entity Operator on replication). Policies add up: Strimzi's own, when its operator writes
    one, allows no more than this."""
    nodes, operator = _peer(BROKER_LABELS), _peer({"strimzi.io/kind": "cluster-operator"}, STRIMZI_NAMESPACE)
    entity = _peer({"strimzi.io/name": ENTITY_OPERATOR})
    p = STRIMZI_PORTS
    ingress = [
        {"from": client_peers(), "ports": GEN._ports(CLIENT_PORT)},
        {"from": [nodes, operator], "ports": GEN._ports(p["controlplane"])},
        {"from": [operator, nodes, entity], "ports": GEN._ports(p["replication"])},
        {"from": [operator], "ports": GEN._ports(p["agent"])},
    ]
    spec = {"podSelector": {"matchLabels": BROKER_LABELS}, "policyTypes": ["Ingress"], "ingress": ingress}
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _meta("sluice-strimzi-kafka-ingress", cluster=False),
        "spec": spec,
    }


def keda_config() -> dict[str, Any]:
    """KEDA's login parameters that are no secret; its password and the CA are Secrets'."""
    data = {"sasl": "scram_sha512", "tls": "enable", "username": acls.SCALER}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(KEDA_CONFIG, cluster=False),
        "data": data,
    }


def _ref(api_version: str, kind: str, name: str) -> dict[str, Any]:
    """The object a patch applies to (or, with ``$patch: delete``, removes)."""
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": name, "namespace": GEN.NAMESPACE}}


def removed() -> list[dict[str, Any]]:
    """What Strimzi's operators replace: the base's brokers, their Services, budget and
    NetworkPolicy, and the release's SCRAM and ACL Jobs (the ACL Job made the topics too)."""
    kinds = [
        ("apps/v1", "StatefulSet", "kafka"),
        ("v1", "Service", "kafka"),
        ("v1", "Service", "kafka-nodes"),
        ("policy/v1", "PodDisruptionBudget", "sluice-kafka"),  # Strimzi keeps one for its pods
        ("networking.k8s.io/v1", "NetworkPolicy", "sluice-kafka-ingress"),
        ("batch/v1", "Job", GEN.job_name("kafka-scram")),
        ("batch/v1", "Job", GEN.job_name("kafka-acls")),
    ]
    return [{"$patch": "delete", **_ref(*ref)} for ref in kinds]


def _deployment_patch(service: str) -> dict[str, Any]:
    """``service``'s secret files: its own Secret's items but the Kafka password, which is the
    ``password`` of its KafkaUser's Secret, projected into the same directory under the same
    file name; and the CA file from the cluster CA's Secret."""
    own = GEN._pod_volumes(service, service)[1]["secret"]
    items = [i for i in own["items"] if i != GEN._kafka_password(service)]
    password = {"key": "password", "path": "SLUICE_KAFKA_SASL_PASSWORD"}
    sources = [
        {"secret": {"name": own["secretName"], "items": items}},
        {"secret": {"name": user_secret(service), "items": [password]}},
    ]
    volumes = [  # every volume, in the base's order: kustomize puts a patch's items first
        {"name": "tmp"},
        {
            "name": "secrets",
            "secret": None,
            "projected": {"sources": sources, "defaultMode": own["defaultMode"]},
        },
        {"name": "kafka-ca", "secret": {"secretName": CLUSTER_CA_SECRET}},
    ]
    doc = _ref("apps/v1", "Deployment", f"sluice-{service}")
    return {**doc, "spec": {"template": {"spec": {"volumes": volumes}}}}


def client_patches() -> list[dict[str, Any]]:
    """The services pointed at Strimzi's cluster (bootstrap, CA, passwords), the migration
    Job's policy without the Jobs that are gone, and webhooks' way to the new brokers."""
    config = {
        **_ref("v1", "ConfigMap", "sluice-config"),
        "data": {"SLUICE_KAFKA_BOOTSTRAP": f"{BOOTSTRAP}:{CLIENT_PORT}"},
    }
    jobs = {
        **_ref("networking.k8s.io/v1", "NetworkPolicy", "sluice-jobs-ingress"),
        "spec": {
            "podSelector": {"matchLabels": {"app.kubernetes.io/name": "migrate"}, "matchExpressions": None}
        },
    }
    egress = GEN._webhooks_egress()["egress"]
    stores = egress[1]
    assert stores["to"] == [GEN._pods("postgresql", "kafka")]  # nosec B101: the base's, as written
    stores["to"] = [GEN._pods("postgresql"), _peer(BROKER_LABELS)]
    webhooks = {
        **_ref("networking.k8s.io/v1", "NetworkPolicy", "sluice-webhooks-egress"),
        "spec": {"egress": egress},
    }
    return [config, *(_deployment_patch(s) for s in GEN.SERVICES), jobs, webhooks]


def keda_patches() -> list[dict[str, Any]]:
    """JSON patches (kustomize's ``patches`` with a target): KEDA's login from the cluster CA,
    keda's KafkaUser Secret and KEDA_CONFIG; each ScaledObject's triggers at the bootstrap
    Service, from KEDA's namespace."""
    auth = {
        "secretTargetRef": [
            {"parameter": "ca", "name": CLUSTER_CA_SECRET, "key": "ca.crt"},
            {"parameter": "password", "name": user_secret(acls.SCALER), "key": "password"},
        ],
        "configMapTargetRef": [
            {"parameter": k, "name": KEDA_CONFIG, "key": k} for k in ("sasl", "tls", "username")
        ],
    }
    entries = [
        _json_patch(
            "TriggerAuthentication", "sluice-keda-kafka", [{"op": "replace", "path": "/spec", "value": auth}]
        )
    ]
    bootstrap = f"{BOOTSTRAP}.{GEN.NAMESPACE}.svc:{CLIENT_PORT}"
    for name, groups in GEN.CONSUMER_GROUPS.items():
        ops = [
            {"op": "replace", "path": f"/spec/triggers/{i}/metadata/bootstrapServers", "value": bootstrap}
            for i in range(len(groups))
        ]
        entries.append(_json_patch("ScaledObject", f"sluice-{name}", ops))
    return entries


def _json_patch(kind: str, name: str, ops: list[dict[str, Any]]) -> dict[str, Any]:
    return {"target": {"kind": kind, "name": name}, "patch": yaml.safe_dump(ops, sort_keys=False)}


KUSTOMIZATION_HEADER = """\
# Production with Kafka run by the Strimzi operator (docs/operations/strimzi.md): the production
# overlay, its brokers, SCRAM and ACL Jobs and its topics Job replaced by a Kafka and its
# KafkaNodePool (kafka.yaml), a KafkaTopic per topic of the suite's topic plan (topics.yaml) and
# a KafkaUser per principal of its ACL plan (users.yaml); the services, KEDA and the
# NetworkPolicies pointed at them (clients.yaml and the JSON patches below). Strimzi's Cluster
# Operator (1.2), watching this namespace, must be installed first.
"""


def files() -> dict[str, list[dict[str, Any]]]:
    """Every file of the overlay but its kustomization, as the generator writes it."""
    return {
        "kafka.yaml": [kafka_cluster(), node_pool(), broker_policy(), keda_config()],
        "topics.yaml": kafka_topics(),
        "users.yaml": kafka_users(),
        "clients.yaml": client_patches(),
    }


def kustomization() -> dict[str, Any]:
    return {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": ["../production", "kafka.yaml", "topics.yaml", "users.yaml"],
        # one deletion a patch: kustomize 5.5 panics on a file of several
        "patches": [
            *({"patch": yaml.safe_dump(d, sort_keys=False)} for d in removed()),
            {"path": "clients.yaml"},
            *keda_patches(),
        ],
    }


def rendered_files() -> Iterator[tuple[str, str]]:
    """(file name, text) of every file of the overlay."""
    for name, docs in files().items():
        yield name, HEADER + yaml.safe_dump_all(docs, sort_keys=False)
    text = yaml.dump(kustomization(), Dumper=_Dumper, sort_keys=False)
    yield "kustomization.yaml", KUSTOMIZATION_HEADER + HEADER + text


HEADER = "# Generated by deploy/k8s/strimzi.py from the suite's plans: edit the generator, then run it.\n"


class _Dumper(yaml.SafeDumper):
    """YAML with multi-line strings (the JSON patches) as literal blocks, readable as written."""


_Dumper.add_representer(
    str,
    lambda d, s: d.represent_scalar("tag:yaml.org,2002:str", s, style="|" if "\n" in s else None),
)


def write() -> None:
    OVERLAY.mkdir(exist_ok=True)
    for name, text in rendered_files():
        (OVERLAY / name).write_text(text)


if __name__ == "__main__":
    write()

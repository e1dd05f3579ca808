"""The rendered NetworkPolicies let the platform work and nothing else (docs/operations.md,
"Network policies"): each flow of a table, from pods, namespaces and addresses to a pod or an
address, is evaluated against the policies of base, production and cloudnative-pg as a
NetworkPolicy implementation does (a pod selected by a policy of a direction takes only what
some such policy allows; peers by podSelector, namespaceSelector, both, or ipBlock with except;
ports by number or by the pod's named port)."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.support.k8s import K8S, generator, render

pytestmark = pytest.mark.unit

GEN = generator()
OVERLAYS = {
    "base": K8S / "base",
    **{n: K8S / "overlays" / n for n in ("production", "cloudnative-pg", "strimzi")},
}


@dataclass(frozen=True)
class Pod:
    namespace: str
    labels: dict[str, str] = field(default_factory=dict)
    ports: dict[str, int] = field(default_factory=dict)  # named container ports


@dataclass(frozen=True)
class Address:
    ip: str


Endpoint = Pod | Address


def selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """A label selector: matchLabels and matchExpressions (In, NotIn, Exists, DoesNotExist)."""
    if any(labels.get(k) != v for k, v in selector.get("matchLabels", {}).items()):
        return False
    for e in selector.get("matchExpressions", []):
        value = labels.get(e["key"])
        match = {
            "In": value in e.get("values", []),
            "NotIn": value not in e.get("values", []),
            "Exists": value is not None,
            "DoesNotExist": value is None,
        }[e["operator"]]
        if not match:
            return False
    return True


def _within(ip: str, cidr: str) -> bool:
    address, network = ipaddress.ip_address(ip), ipaddress.ip_network(cidr)
    return address.version == network.version and address in network


def peer_matches(peer: dict[str, Any], policy_namespace: str, who: Endpoint) -> bool:
    if "ipBlock" in peer:
        if not isinstance(who, Address):
            return False  # pods here are matched by selectors, never by their addresses
        block = peer["ipBlock"]
        return _within(who.ip, block["cidr"]) and not any(_within(who.ip, c) for c in block.get("except", []))
    if not isinstance(who, Pod):
        return False
    if "namespaceSelector" in peer:
        if not selects(peer["namespaceSelector"], {"kubernetes.io/metadata.name": who.namespace}):
            return False
    elif who.namespace != policy_namespace:
        return False
    return selects(peer.get("podSelector", {}), who.labels)


def port_matches(rule: dict[str, Any], port: int, protocol: str, target: Endpoint) -> bool:
    if not rule.get("ports"):
        return True
    named = target.ports if isinstance(target, Pod) else {}
    for p in rule["ports"]:
        number = named.get(p["port"]) if isinstance(p.get("port"), str) else p.get("port")
        if p.get("protocol", "TCP") == protocol and (("port" not in p) or number == port):
            return True
    return False


def allowed_by(
    policies: list[dict[str, Any]],
    direction: str,
    pod: Pod,
    other: Endpoint,
    port: int,
    protocol: str,
    target: Endpoint,
) -> bool:
    """Whether ``pod``'s policies of ``direction`` let it talk with ``other`` (on ``target``'s port)."""
    key, peers = ("ingress", "from") if direction == "Ingress" else ("egress", "to")
    mine = [
        p
        for p in policies
        if p["metadata"]["namespace"] == pod.namespace
        and direction in p["spec"].get("policyTypes", ["Ingress"])
        and selects(p["spec"]["podSelector"], pod.labels)
    ]
    if not mine:
        return True  # not isolated in this direction
    return any(
        (not rule.get(peers) or any(peer_matches(x, p["metadata"]["namespace"], other) for x in rule[peers]))
        and port_matches(rule, port, protocol, target)
        for p in mine
        for rule in p["spec"].get(key, [])
    )


def allowed(
    policies: list[dict[str, Any]], src: Endpoint, dst: Endpoint, port: int, protocol: str = "TCP"
) -> bool:
    out = not isinstance(src, Pod) or allowed_by(policies, "Egress", src, dst, port, protocol, dst)
    into = not isinstance(dst, Pod) or allowed_by(policies, "Ingress", dst, src, port, protocol, dst)
    return out and into


def suite_pod(name: str, *ports: tuple[str, int]) -> Pod:
    return Pod("sluice", {"app.kubernetes.io/part-of": "sluice", "app.kubernetes.io/name": name}, dict(ports))


def world(docs: list[dict[str, Any]]) -> dict[str, Endpoint]:
    """Every party of the flow table. PostgreSQL's pods carry the Cluster's inherited labels and
    the operator's own (cloudnative-pg), or the labels the docs ask of a server of your own."""
    clusters = [d for d in docs if d["kind"] == "Cluster"]
    inherited = (
        clusters[0]["spec"].get("inheritedMetadata", {}).get("labels", {})
        if clusters
        else {"app.kubernetes.io/part-of": "sluice", "app.kubernetes.io/name": "postgresql"}
    )
    cnpg = {"cnpg.io/cluster": "sluice-pg", **inherited}
    pods: dict[str, Endpoint] = {
        n: suite_pod(
            n, ("http", p), *((("metrics", GEN.METRICS_PORTS[n]),) if n in GEN.METRICS_PORTS else ())
        )
        for n, (p, _, _) in GEN.SERVICES.items()
    }
    pods |= {n: suite_pod(n) for n in ("migrate", "kafka-scram", "kafka-acls", "kafka", "valkey")}
    return (
        pods
        | strimzi_pods()
        | {
            "postgresql": Pod("sluice", {**cnpg, "cnpg.io/podRole": "instance"}),
            "postgresql-join": Pod("sluice", {**cnpg, "cnpg.io/jobRole": "join"}),
            "cnpg-operator": Pod(GEN.CNPG_NAMESPACE, {"app.kubernetes.io/name": "cloudnative-pg"}),
            "prometheus": Pod(GEN.MONITORING_NAMESPACE, {"app.kubernetes.io/name": "prometheus"}),
            "ingress-controller": Pod("ingress-nginx", {"app.kubernetes.io/name": "ingress-nginx"}),
            "operator-tools": Pod(GEN.OPERATORS_NAMESPACE, {"app": "toolbox"}),
            "keda": Pod(GEN.KEDA_NAMESPACE, {"app": "keda-operator"}),
            "kube-dns": Pod("kube-system", {"k8s-app": "kube-dns"}),
            "internet": Address("203.0.113.7"),
            "internet-v6": Address("2001:db8::7"),
            "private": Address("10.1.2.3"),
            "metadata": Address("169.254.169.254"),
        }
    )


def strimzi_pods() -> dict[str, Endpoint]:
    """Strimzi's pods, labelled as its operator labels them (1.2.0: Labels.generateDefaultLabels
    and the node pools'): the cluster's nodes, its Entity Operator (the Topic and User
    Operators), the Cluster Operator in its own namespace, and one of another cluster."""
    cluster = {"strimzi.io/cluster": "sluice-kafka", "strimzi.io/kind": "Kafka"}
    node = {
        **cluster,
        "strimzi.io/name": "sluice-kafka-kafka",
        "strimzi.io/pool-name": "nodes",
        "strimzi.io/component-type": "kafka",
        "strimzi.io/broker-role": "true",
        "strimzi.io/controller-role": "true",
        "app.kubernetes.io/name": "kafka",
        "app.kubernetes.io/instance": "sluice-kafka",
        "app.kubernetes.io/part-of": "strimzi-sluice-kafka",
        "app.kubernetes.io/managed-by": "strimzi-cluster-operator",
    }
    entity = {
        **cluster,
        "strimzi.io/name": "sluice-kafka-entity-operator",
        "app.kubernetes.io/name": "entity-operator",
    }
    operator = {"name": "strimzi-cluster-operator", "strimzi.io/kind": "cluster-operator"}
    return {
        "strimzi-kafka": Pod("sluice", node),
        "strimzi-entity-operator": Pod("sluice", entity),
        "strimzi-cluster-operator": Pod("strimzi", operator),
        "other-kafka": Pod(
            "other", {**node, "strimzi.io/cluster": "other", "strimzi.io/name": "other-kafka"}
        ),
    }


K = GEN.KAFKA_PORTS
PG = GEN.POSTGRES_PORTS
S = {"client": 9093, "controlplane": 9090, "replication": 9091, "agent": 8443}  # Strimzi's nodes'
# The Kafka flows of each way to run it: the base's own brokers, or Strimzi's (the strimzi overlay)
KAFKA_ALLOWED = {
    "own": [
        *((n, "kafka", K["CLIENT"], "TCP") for n in (*GEN.SERVICES, "kafka-acls")),
        ("keda", "kafka", K["CLIENT"], "TCP"),
        ("kafka", "kafka", K["CONTROLLER"], "TCP"),
        ("kafka", "kafka", K["INTERNAL"], "TCP"),
        ("kafka-scram", "kafka", K["INTERNAL"], "TCP"),
    ],
    "strimzi": [
        *((n, "strimzi-kafka", S["client"], "TCP") for n in GEN.SERVICES),
        ("keda", "strimzi-kafka", S["client"], "TCP"),
        ("strimzi-kafka", "strimzi-kafka", S["controlplane"], "TCP"),  # the KRaft quorum
        ("strimzi-kafka", "strimzi-kafka", S["replication"], "TCP"),
        ("strimzi-cluster-operator", "strimzi-kafka", S["controlplane"], "TCP"),
        ("strimzi-cluster-operator", "strimzi-kafka", S["replication"], "TCP"),
        ("strimzi-cluster-operator", "strimzi-kafka", S["agent"], "TCP"),  # rolling, readiness
        ("strimzi-entity-operator", "strimzi-kafka", S["replication"], "TCP"),  # topics, users, ACLs
    ],
}
KAFKA_DENIED = {
    "own": [
        ("internet", "kafka", K["CLIENT"], "TCP"),
        ("gateway", "kafka", K["INTERNAL"], "TCP"),
    ],
    "strimzi": [
        ("internet", "strimzi-kafka", S["client"], "TCP"),
        ("other-kafka", "strimzi-kafka", S["client"], "TCP"),
        ("gateway", "strimzi-kafka", S["replication"], "TCP"),
        ("gateway", "strimzi-kafka", S["controlplane"], "TCP"),
        ("keda", "strimzi-kafka", S["replication"], "TCP"),
        ("strimzi-entity-operator", "strimzi-kafka", S["agent"], "TCP"),
        ("other-kafka", "strimzi-kafka", S["replication"], "TCP"),
        ("webhooks", "strimzi-kafka", S["replication"], "TCP"),
    ],
}
# (from, to, port, protocol): each must be allowed
ALLOWED = [
    ("cnpg-operator", "postgresql", PG["status"], "TCP"),
    ("cnpg-operator", "postgresql", PG["postgres"], "TCP"),
    ("postgresql", "postgresql", PG["postgres"], "TCP"),  # replication
    ("postgresql", "postgresql", PG["status"], "TCP"),
    ("postgresql-join", "postgresql", PG["postgres"], "TCP"),  # a new standby's base backup
    ("prometheus", "postgresql", PG["metrics"], "TCP"),
    *(("prometheus", n, GEN.METRICS_PORTS.get(n, p), "TCP") for n, (p, _, _) in GEN.SERVICES.items()),
    ("ingress-controller", "gateway", 8000, "TCP"),
    ("internet", "gateway", 8000, "TCP"),
    ("operator-tools", "admin", 8001, "TCP"),
    *((n, "postgresql", PG["postgres"], "TCP") for n in (*GEN.SERVICES, "migrate")),
    ("gateway", "valkey", GEN.VALKEY_PORT, "TCP"),
    ("admin", "valkey", GEN.VALKEY_PORT, "TCP"),
    ("webhooks", "internet", 443, "TCP"),
    ("webhooks", "internet-v6", 443, "TCP"),
    ("webhooks", "kube-dns", 53, "UDP"),
]
DENIED = [
    ("internet", "ledger", 8011, "TCP"),
    ("internet", "admin", 8001, "TCP"),
    ("internet", "postgresql", PG["postgres"], "TCP"),
    ("gateway", "postgresql", PG["status"], "TCP"),  # the instance manager is the operator's
    ("ledger", "valkey", GEN.VALKEY_PORT, "TCP"),
    ("webhooks", "private", 443, "TCP"),
    ("webhooks", "metadata", 80, "TCP"),
    ("internet", "migrate", 8000, "TCP"),
]


@pytest.fixture(scope="module", params=OVERLAYS)
def overlay(request: pytest.FixtureRequest) -> tuple[str, list[dict[str, Any]]]:
    return request.param, render(OVERLAYS[request.param])


def kafka_of(name: str) -> str:
    return "strimzi" if name == "strimzi" else "own"


def _refused(docs: list[dict[str, Any]], flows: list[tuple[str, str, int, str]], expected: bool) -> list[str]:
    policies = [d for d in docs if d["kind"] == "NetworkPolicy"]
    parties = world(docs)
    return [
        f"{src} -> {dst}:{port}/{protocol}"
        for src, dst, port, protocol in flows
        if allowed(policies, parties[src], parties[dst], port, protocol) != expected
    ]


def test_every_flow_the_platform_needs_is_allowed(overlay: tuple[str, list[dict[str, Any]]]) -> None:
    name, docs = overlay
    refused = _refused(docs, ALLOWED + KAFKA_ALLOWED[kafka_of(name)], True)
    assert refused == [], "\n".join(refused)


def test_the_flows_nobody_needs_are_denied(overlay: tuple[str, list[dict[str, Any]]]) -> None:
    name, docs = overlay
    let_through = _refused(docs, DENIED + KAFKA_DENIED[kafka_of(name)], False)
    assert let_through == [], "\n".join(let_through)


def test_strimzi_s_own_policy_opens_its_listener_to_no_more_than_ours() -> None:
    """Strimzi's Cluster Operator writes a NetworkPolicy of its own for the nodes, which opens a
    listener to everyone unless the listener names its peers (policies add up): the listener's
    peers are the ones the overlay's policy gives that port."""
    docs = render(OVERLAYS["strimzi"])
    (kafka,) = [d for d in docs if d["kind"] == "Kafka"]
    (listener,) = kafka["spec"]["kafka"]["listeners"]
    (ours,) = [
        d
        for d in docs
        if d["kind"] == "NetworkPolicy" and d["metadata"]["name"] == "sluice-strimzi-kafka-ingress"
    ]
    (rule,) = [
        r for r in ours["spec"]["ingress"] if {"port": listener["port"], "protocol": "TCP"} in r["ports"]
    ]
    assert listener["networkPolicyPeers"] == rule["from"]


def test_the_evaluator_denies_what_an_isolating_policy_leaves_out() -> None:
    """The evaluator itself: default deny once a pod is selected, open when none selects it."""
    pod = Pod("sluice", {"app.kubernetes.io/name": "x"}, {"http": 80})
    policy = {
        "metadata": {"namespace": "sluice"},
        "spec": {
            "podSelector": {},
            "policyTypes": ["Ingress"],
            "ingress": [
                {"from": [{"podSelector": {"matchLabels": {"a": "b"}}}], "ports": [{"port": "http"}]}
            ],
        },
    }
    friend = Pod("sluice", {"a": "b"})
    assert allowed([policy], friend, pod, 80)
    assert not allowed([policy], friend, pod, 81)
    assert not allowed([policy], Pod("other", {"a": "b"}), pod, 80)
    assert allowed([], Address("203.0.113.7"), pod, 81)

"""The Kafka ACL plan (common.acls; docs/security.md, "Kafka ACLs") gives WRITE on the control
topic to admin alone, and each service WRITE on the topics it produces to and nothing else;
the embedded broker's SASL node enforces ACLs (tests/integration/test_kafka_acls.py runs it)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from common import acls
from common.topics import Topic, Topics
from tests.support.k8s import generator
from tools.stack.kafka import BROKER_USER, KafkaNode

pytestmark = pytest.mark.unit
K8S = Path(__file__).resolve().parents[2] / "deploy" / "k8s"


@pytest.mark.parametrize("prefix", ["sluice", "staging"])
def test_only_admin_may_write_the_control_topic(prefix: str) -> None:
    access = acls.plan(prefix)
    assert acls.writers(access, Topics(prefix).control_events) == {"User:admin"}
    # no prefix grant reaches it either (the responders' is the reply topics')
    for a in access.values():
        assert not any(p.prefixed and Topics(prefix).control_events.startswith(p.name) for p in a.write)


@pytest.mark.parametrize("prefix", ["sluice", "staging"])
def test_only_the_deciders_may_write_the_ledgers_commands(prefix: str) -> None:
    """Topics follow authority (docs/security.md, "no single point of trust"): the ledger's
    commands topic is written by compliance and admin alone (on main the gateway could, and so approve its own
    transfers); the gateway's reads travel on ledger.reads."""
    access, t = acls.plan(prefix), Topics(prefix)
    assert acls.writers(access, t.ledger_commands) == {"User:compliance", "User:admin"}
    assert acls.writers(access, t.ledger_reads) == {"User:gateway", "User:admin"}
    # admin reads each topic a letter can be redriven to, to check the letter's origin first
    assert {acls.Pattern(f"{prefix}.{x}") for x in acls.REDRIVABLE} <= access["User:admin"].read


def test_every_topic_names_its_producers_and_consumers() -> None:
    """A topic added to common.topics without saying who writes and reads it fails here (its
    principals would be refused, or, worse, someone would widen a grant to make it work)."""
    assert [t for t in Topic if t not in acls.PRODUCERS] == []
    assert [t for t in Topic if t not in acls.CONSUMERS] == []
    named = {s for who in acls.PRODUCERS.values() for s in who}
    named |= {s for who in acls.CONSUMERS.values() for s in who}
    assert named <= set(acls.SERVICES)


@pytest.mark.parametrize("service", acls.SERVICES)
def test_each_service_writes_only_its_own_topics(service: str) -> None:
    t = Topics()
    access = acls.plan()[f"User:{service}"]
    own = {acls.Pattern(t[topic]) for topic in Topic if service in acls.PRODUCERS[topic]}
    replies = {acls.Pattern(t.replies(""), prefixed=True)} if service in acls.RESPONDERS else set()
    assert access.write == own | replies
    assert all(
        acls.writers(acls.plan(), t[topic]) == {f"User:{s}" for s in acls.PRODUCERS[topic]} for topic in Topic
    )
    # CREATE and DELETE only on its own reply topics: no service creates a shared topic (the
    # operator's topics Job does, as the brokers' principal, at the cluster's replication)
    mine = {acls.Pattern(f"{t.replies(service)}-", prefixed=True)} if service in acls.CALLERS else set()
    shared = {acls.Pattern(t[topic]) for topic in Topic}
    assert access.delete == mine
    assert access.create == mine and not access.create & shared
    # one caller's reply topics are not another's: no prefix of one covers the other
    assert not any(
        p.name.startswith(q.name) or q.name.startswith(p.name)
        for p in mine
        for q in ({acls.Pattern(f"{t.replies(o)}-", prefixed=True) for o in acls.CALLERS if o != service})
    )


def test_bindings_cover_the_plan_and_grant_nothing_on_the_cluster() -> None:
    access = acls.plan()
    found = list(acls.bindings(access))
    assert {b.resource for b in found} == {"TOPIC", "GROUP"}
    assert {b.operation for b in found} <= set(acls.OPERATIONS)
    writes = {(b.principal, b.pattern) for b in found if b.operation == "WRITE"}
    assert writes == {(a.principal, p) for a in access.values() for p in a.write}
    groups = {b.pattern.name for b in found if b.resource == "GROUP" and b.principal == "User:webhooks"}
    assert groups == {"sluice-webhooks", "sluice-webhooks-commands"}


def test_a_sasl_node_enforces_acls_and_keeps_its_users_private(tmp_path: Path) -> None:
    node = KafkaNode(1, 19092, 19093, tmp_path, sasl_users={BROKER_USER: 'p"w\\1', "admin": "a"})
    props = dict(line.split("=", 1) for line in node.properties().splitlines())
    assert (
        props["listener.security.protocol.map"] == "CONTROLLER:SASL_PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT"
    )
    assert props["authorizer.class.name"] == "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
    assert props["allow.everyone.if.no.acl.found"] == "false"
    assert props["super.users"] == f"User:{BROKER_USER}"
    assert "PLAINTEXT://" not in props["listeners"].replace("SASL_PLAINTEXT://", "")
    assert 'p"w' not in node.properties()  # passwords only in the JAAS file
    node._write_jaas()
    assert stat.S_IMODE(node.jaas_file.stat().st_mode) == 0o600
    text = node.jaas_file.read_text()
    assert 'user_admin="a"' in text and 'password="p\\"w\\\\1"' in text
    plain = KafkaNode(1, 19092, 19093, tmp_path)
    assert "authorizer.class.name" not in plain.properties()  # the default is unchanged


def test_keda_only_describes() -> None:
    keda = acls.plan()["User:keda"]
    assert not (keda.write or keda.read or keda.create or keda.delete or keda.groups)
    assert {p.name for p in keda.describe} >= {Topics().ledger_commands, Topics().events}


def test_deploy_k8s_runs_kafka_with_sasl_and_each_service_as_its_own_principal() -> None:
    docs = generator().render(K8S / "base")
    kafka = next(d for d in docs if d["kind"] == "StatefulSet")["spec"]["template"]["spec"]
    env = {e["name"]: e["value"] for e in kafka["containers"][0]["env"]}
    protocols = dict(x.split(":") for x in env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"].split(","))
    assert set(protocols.values()) == {"SASL_SSL"}  # every listener (tests/unit/test_k8s_kafka_tls.py)
    assert env["KAFKA_ALLOW_EVERYONE_IF_NO_ACL_FOUND"] == "false"
    assert env["KAFKA_SUPER_USERS"] == f"User:{BROKER_USER}"
    assert env["KAFKA_AUTHORIZER_CLASS_NAME"].endswith("StandardAuthorizer")
    assert "CLIENT://" in kafka["containers"][0]["args"][0]  # what it advertises
    config = next(d for d in docs if d["kind"] == "ConfigMap")["data"]
    assert config["SLUICE_KAFKA_SECURITY_PROTOCOL"] == "SASL_SSL"
    for dep in (d for d in docs if d["kind"] == "Deployment"):
        name = dep["metadata"]["name"].removeprefix("sluice-")
        pod = dep["spec"]["template"]["spec"]
        env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
        assert env["SLUICE_KAFKA_SASL_USERNAME"] == name and name in acls.SERVICES
        items = [i for v in pod["volumes"] if "secret" in v for i in v["secret"]["items"]]
        passwords = {i["key"] for i in items if i["path"] == "SLUICE_KAFKA_SASL_PASSWORD"}
        assert passwords == {f"SLUICE_KAFKA_SASL_PASSWORD_{name.upper()}"}  # its own, no other's
    job = next(d for d in docs if d["metadata"]["name"].startswith("sluice-kafka-acls-"))["spec"]["template"][
        "spec"
    ]
    assert job["containers"][0]["args"] == ["python -m sluice topics && python -m sluice acls"]
    assert {"name": "SLUICE_KAFKA_SASL_USERNAME", "value": BROKER_USER} in job["containers"][0]["env"]

"""On Apache Kafka with SASL/PLAIN and ACLs (docs/security.md, "Kafka ACLs"), only admin's
principal may produce to the control topic, and each service only to its own topics.

One single-node broker of its own (tools.stack.kafka with ``sasl_users``: every listener
SASL/PLAIN, the StandardAuthorizer, nothing allowed without an ACL), the topics created and
the ACLs made by ``python -m sluice acls`` as the broker's principal (what the deploy/k8s Job
runs); then every service publishes as its own principal through the broker it runs with
(``common.broker.create_broker``, so ``common.kafka`` carries the SASL settings).
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAuthorizationFailedError
from pydantic import SecretStr

from common import acls, kafka
from common.broker import create_broker, ensure_topics
from common.settings import Settings
from common.topics import Topic, Topics
from tests.support.cli import run_module
from tools.stack import kafka as kafka_embedded
from tools.stack.processes import ROOT, python_env

pytestmark = pytest.mark.integration
TOPICS = Topics()


class Broker:
    def __init__(self, address: str, passwords: dict[str, str]) -> None:
        self.address, self.passwords = address, passwords

    def settings(self, user: str) -> Settings:
        return Settings(
            kafka_bootstrap=self.address,
            kafka_security_protocol="SASL_PLAINTEXT",
            kafka_sasl_mechanism="PLAIN",
            kafka_sasl_username=user,
            kafka_sasl_password=SecretStr(self.passwords[user]),
            kafka_request_timeout_ms=10000,
        )


@pytest.fixture(scope="module")
def sasl_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    why = kafka_embedded.missing()
    if why:
        # make setup fetches the broker and the session's stack runs on it: missing is a broken
        # set-up, never a reason to pass over the ACL checks
        pytest.fail(f"embedded Apache Kafka unavailable (run make setup): {why}")
    users = [kafka_embedded.BROKER_USER, *acls.SERVICES]
    passwords = {u: secrets.token_urlsafe(18) for u in users}
    workdir = Path(tmp_path_factory.mktemp("kafka-sasl"))
    nodes = kafka_embedded.start_nodes(workdir, sasl_users=passwords)
    try:
        broker = Broker(nodes[0].address, passwords)
        asyncio.run(_create_topics(broker.settings(kafka_embedded.BROKER_USER)))
        env = {k: v for k, v in python_env({}).items() if not k.startswith("SLUICE_")}
        env |= {
            "SLUICE_ENV": "development",
            "SLUICE_KAFKA_BOOTSTRAP": broker.address,
            "SLUICE_KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
            "SLUICE_KAFKA_SASL_MECHANISM": "PLAIN",
            "SLUICE_KAFKA_SASL_USERNAME": kafka_embedded.BROKER_USER,
            "SLUICE_KAFKA_SASL_PASSWORD": passwords[kafka_embedded.BROKER_USER],
        }
        made = run_module("sluice", "acls", env=env, cwd=ROOT, timeout=120)
        assert made.returncode == 0, made.stdout + made.stderr
        assert passwords[kafka_embedded.BROKER_USER] not in made.stdout + made.stderr
        yield broker
    finally:
        for n in nodes:
            n.stop()


async def _create_topics(settings: Settings) -> None:
    admin = AIOKafkaAdminClient(**kafka.client_args(settings))
    await admin.start()
    try:
        await admin.create_topics([NewTopic(TOPICS[t], 1, 1) for t in Topic])
    finally:
        await admin.close()


async def _publish(settings: Settings, service: str, topics: list[str]) -> dict[str, str]:
    """Publish one record to each topic in turn as ``service``: 'ok' or the error's name."""
    broker = create_broker(settings, f"acl-test-{service}")
    await broker.start()
    out = {}
    try:
        for topic in topics:
            try:
                await asyncio.wait_for(broker.publish(b"{}", topic=topic), 15)
                out[topic] = "ok"
            except TopicAuthorizationFailedError:
                out[topic] = "TopicAuthorizationFailed"
    finally:
        await broker.stop()
    return out


def test_only_admin_produces_to_the_control_topic(sasl_kafka: Broker) -> None:
    control = TOPICS.control_events
    found = {
        svc: asyncio.run(_publish(sasl_kafka.settings(svc), svc, [control]))[control] for svc in acls.SERVICES
    }
    assert found == {svc: "ok" if svc == acls.ADMIN else "TopicAuthorizationFailed" for svc in acls.SERVICES}


@pytest.mark.parametrize("service", [s for s in acls.SERVICES if s != acls.ADMIN])
def test_each_service_produces_to_its_own_topics_only(sasl_kafka: Broker, service: str) -> None:
    own = sorted(TOPICS[t] for t in Topic if service in acls.PRODUCERS.get(t, ()))
    others = sorted(TOPICS[t] for t in Topic if service not in acls.PRODUCERS.get(t, ()))
    assert own and others  # every service writes something, and is refused somewhere
    # its own first: a refusal never spoils the producer for what follows
    found = asyncio.run(_publish(sasl_kafka.settings(service), service, own + others))
    assert found == dict.fromkeys(own, "ok") | dict.fromkeys(others, "TopicAuthorizationFailed")


def test_reply_topics_belong_to_their_caller(sasl_kafka: Broker) -> None:
    """The gateway creates its own reply topic and a responder answers there; another
    service can neither create a topic under the gateway's name nor write the admin's."""
    mine = f"{TOPICS.replies('gateway-test')}.1"
    forged = f"{TOPICS.replies('gateway-forged')}.1"

    async def check() -> None:
        await ensure_topics(sasl_kafka.settings("gateway"), [mine], partitions=1)
        await ensure_topics(sasl_kafka.settings("webhooks"), [forged], partitions=1)
        admin = AIOKafkaAdminClient(**kafka.client_args(sasl_kafka.settings(kafka_embedded.BROKER_USER)))
        await admin.start()
        try:
            names = set(await admin.list_topics())
        finally:
            await admin.close()
        assert mine in names and forged not in names
        assert await _publish(sasl_kafka.settings("ledger"), "ledger", [mine]) == {mine: "ok"}
        assert await _publish(sasl_kafka.settings("admin"), "admin", [mine]) == {
            mine: "TopicAuthorizationFailed"
        }

    asyncio.run(check())


def test_the_gateway_cannot_write_what_moves_money(sasl_kafka: Broker) -> None:
    """On a broker with SASL and ACLs: the gateway's principal may not
    produce to the ledger's commands (on main it could: it sent its reads there) nor to the
    ledger's allowance releases; its reads go to ledger.reads."""
    topics = [TOPICS.ledger_reads, TOPICS.ledger_commands, TOPICS.compliance_releases]
    found = asyncio.run(_publish(sasl_kafka.settings("gateway"), "gateway", topics))
    assert found == {
        TOPICS.ledger_reads: "ok",
        TOPICS.ledger_commands: "TopicAuthorizationFailed",
        TOPICS.compliance_releases: "TopicAuthorizationFailed",
    }

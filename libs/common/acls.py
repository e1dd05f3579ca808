"""Kafka ACLs: which principal may do what on which topic and group, so that no service writes
a topic it has no business writing (docs/security.md, "Kafka ACLs").

Where Apache Kafka runs with SASL and an authorizer (``allow.everyone.if.no.acl.found=false``),
each service connects as its own principal, ``User:<service>``
(``SLUICE_KAFKA_SASL_USERNAME=<service>``), and holds only the grants :func:`plan` gives it:

- **WRITE** on the topics it produces to (:data:`PRODUCERS`). The control topic (key revoked,
  tenant disabled, policy changed: every gateway evicts on it) is written by ``User:admin``
  only. Results go to the caller's reply topic (``<prefix>.replies.<instance>``), so the three
  services that answer commands write under that prefix.
- **READ** on the topics it consumes (:data:`CONSUMERS`) and on its consumer groups
  (``Topics.group``); gateway and admin READ, CREATE and DELETE their own reply topics
  (``<prefix>.replies.<service>-``: ``common.rpc.instance_id``, so ``SLUICE_INSTANCE_ID``, when
  set, must begin with ``<service>-``).
- ``User:keda`` (KEDA's lag scaler) only DESCRIBEs the consumed topics and their groups.
- **DESCRIBE** on every shared topic (each service checks at start that they exist,
  ``common.broker.ensure_shared_topics``); **CREATE** on them for no service: the operator's
  topics Job creates them (``python -m sluice topics``, as the brokers' own principal, at the
  cluster's replication factor), so no topic is ever made with one service's settings.

Nothing else: no cluster operation, no transactional id. :func:`apply` creates the bindings
with the CreateAcls request (aiokafka's admin client has no method for it), as a principal
allowed to alter ACLs (a super user: ``python -m sluice acls``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from common.topics import Topic, Topics

ADMIN = "admin"
SERVICES = ("gateway", "admin", "ledger", "compliance", "webhooks")
#: The services that answer commands on the caller's reply topic (common.rpc.reply).
RESPONDERS = ("ledger", "compliance", "webhooks")
#: The HTTP services that own reply topics (common.rpc.RpcClient).
CALLERS = ("gateway", "admin")
#: KEDA's Kafka scaler (deploy/k8s keda.yaml): reads consumer lag, DESCRIBE only.
SCALER = "keda"

#: The journal's anchors (``Topic.JOURNAL_ANCHORS``), by value: the keys below are
#: :class:`~common.topics.Topic` values (a ``StrEnum`` member finds its value's entry).
JOURNAL_ANCHORS = "journal.anchors"

#: Who produces to each shared topic (grep ``publish``/``OutMessage`` in services/*); every
#: topic of :class:`~common.topics.Topic` has its entry (tests/unit/test_kafka_acls.py).
PRODUCERS: dict[str, frozenset[str]] = {
    # gateway (partner commands), admin (operator commands, redrive)
    Topic.COMPLIANCE_COMMANDS: frozenset({"gateway", "admin"}),
    # the ledger gives a refused transfer's allowance back; admin (redrive)
    Topic.COMPLIANCE_RELEASES: frozenset({"ledger", "admin"}),
    # compliance (approved commands) and admin (operator commands, redrive), each signed: the
    # gateway may not write here, so it cannot approve its own transfers (docs/security.md,
    # "Round 5: no single point of trust")
    Topic.LEDGER_COMMANDS: frozenset({"admin", "compliance"}),
    # the gateway's reads of ledger resources and fees; admin (redrive)
    Topic.LEDGER_READS: frozenset({"gateway", "admin"}),
    Topic.WEBHOOKS_COMMANDS: frozenset({"gateway", "admin"}),
    # the ledger's outbox; admin redrives a dead-lettered event to where it came from
    Topic.EVENTS: frozenset({"ledger", "admin"}),
    Topic.CONTROL_EVENTS: frozenset({ADMIN}),  # the operator's broadcast: admin only
    # every consumer runtime that gives up on a message (admin's own reader never re-queues)
    Topic.DEAD_LETTERS: frozenset({"gateway", "ledger", "compliance", "webhooks"}),
    # signed chain heads: the ledger alone, never redriven (nobody dead-letters them)
    JOURNAL_ANCHORS: frozenset({"ledger"}),
}

#: Who consumes each shared topic, and in which group (a suffix of ``Topics.group``; None: the
#: reader assigns itself every partition, no group).
CONSUMERS: dict[str, dict[str, str | None]] = {
    Topic.COMPLIANCE_COMMANDS: {"compliance": "compliance"},
    Topic.COMPLIANCE_RELEASES: {"compliance": "compliance-releases"},
    Topic.LEDGER_COMMANDS: {"ledger": "ledger"},
    Topic.LEDGER_READS: {"ledger": "ledger-reads"},
    Topic.WEBHOOKS_COMMANDS: {"webhooks": "webhooks-commands"},
    Topic.EVENTS: {"webhooks": "webhooks", "compliance": "compliance-usage"},
    Topic.CONTROL_EVENTS: {"gateway": None},
    Topic.DEAD_LETTERS: {"admin": "admin-dlq"},
    JOURNAL_ANCHORS: {"ledger": None},  # verify_journal reads them from the start
}


#: The topics a dead letter may be redriven to: each consumed by the service that gave up on it
#: (admin checks the letter against the record at its origin first, admin.actions.dead_letters).
REDRIVABLE: tuple[str, ...] = tuple(
    topic
    for topic, readers in CONSUMERS.items()
    if topic not in (Topic.DEAD_LETTERS, JOURNAL_ANCHORS) and readers
)


class Pattern(NamedTuple):
    """A resource name, matched exactly or (``prefixed``) as the start of a name."""

    name: str
    prefixed: bool = False


@dataclass(frozen=True)
class Access:
    """One principal's grants."""

    principal: str
    write: frozenset[Pattern] = field(default_factory=frozenset)
    read: frozenset[Pattern] = field(default_factory=frozenset)
    describe: frozenset[Pattern] = field(default_factory=frozenset)
    create: frozenset[Pattern] = field(default_factory=frozenset)
    delete: frozenset[Pattern] = field(default_factory=frozenset)
    groups: frozenset[str] = field(default_factory=frozenset)  # READ (join, commit)
    described_groups: frozenset[str] = field(default_factory=frozenset)  # DESCRIBE (offsets)


def principal(service: str) -> str:
    return f"User:{service}"


def plan(prefix: str = "sluice") -> dict[str, Access]:
    """Every service principal's grants, and KEDA's, keyed by principal (``User:<name>``)."""
    t = Topics(prefix)
    shared = frozenset(Pattern(t[topic]) for topic in Topic)
    out = {}
    for svc in SERVICES:
        own_replies = Pattern(f"{t.replies(svc)}-", prefixed=True)
        write = {Pattern(t[topic]) for topic in Topic if svc in PRODUCERS.get(topic, ())}
        if svc in RESPONDERS:
            write.add(Pattern(t.replies(""), prefixed=True))
        read = {Pattern(t[topic]) for topic in Topic if svc in CONSUMERS.get(topic, {})}
        if svc == ADMIN:  # a dead letter's origin is read back before it is redriven
            read |= {Pattern(f"{prefix}.{topic}") for topic in REDRIVABLE}
        groups = {t.group(g) for topic in Topic if (g := CONSUMERS.get(topic, {}).get(svc))}
        mine = frozenset({own_replies}) if svc in CALLERS else frozenset()
        out[principal(svc)] = Access(
            principal(svc),
            write=frozenset(write),
            read=frozenset(read) | mine,
            describe=shared | mine,
            create=mine,
            delete=mine,
            groups=frozenset(groups),
        )
    grouped = {topic: CONSUMERS.get(topic, {}) for topic in Topic}  # the lag KEDA reads
    out[principal(SCALER)] = Access(
        principal(SCALER),
        describe=frozenset(Pattern(t[topic]) for topic, readers in grouped.items() if any(readers.values())),
        described_groups=frozenset(t.group(g) for readers in grouped.values() for g in readers.values() if g),
    )
    return out


def writers(access: dict[str, Access], topic: str) -> set[str]:
    """The principals that may WRITE ``topic`` (literally or through a prefix)."""
    return {
        a.principal
        for a in access.values()
        for p in a.write
        if (topic.startswith(p.name) if p.prefixed else topic == p.name)
    }


# Kafka's wire codes (org.apache.kafka.common.resource / acl): ResourceType, PatternType,
# AclOperation, AclPermissionType.
TOPIC, GROUP = 2, 3
LITERAL, PREFIXED = 3, 4
OPERATIONS = {"READ": 3, "WRITE": 4, "CREATE": 5, "DELETE": 6, "DESCRIBE": 8}
ALLOW = 3


class Binding(NamedTuple):
    """One ACL: ``principal`` may ``operation`` on a topic or group, from any host."""

    principal: str
    resource: str  # TOPIC or GROUP
    pattern: Pattern
    operation: str

    def __str__(self) -> str:
        kind = "PREFIXED" if self.pattern.prefixed else "LITERAL"
        return f"{self.principal} {self.operation} {self.resource}:{self.pattern.name} ({kind})"


def bindings(access: dict[str, Access]) -> Iterator[Binding]:
    for a in access.values():
        for op in ("write", "read", "describe", "create", "delete"):
            for p in sorted(getattr(a, op)):
                yield Binding(a.principal, "TOPIC", p, op.upper())
        for g in sorted(a.groups):
            yield Binding(a.principal, "GROUP", Pattern(g), "READ")
        for g in sorted(a.described_groups):
            yield Binding(a.principal, "GROUP", Pattern(g), "DESCRIBE")


async def apply(acls: Iterable[Binding], **admin_args: Any) -> list[str]:
    """Create ``acls`` on the cluster (idempotent: an ACL that exists is kept); returns one
    line per binding that the broker refused, with its error (empty when all were made)."""
    from aiokafka.protocol.admin import CreateAclsRequest

    from common.kafka import admin_client

    failed = []
    async with admin_client(**admin_args) as admin:
        for b in acls:
            request = CreateAclsRequest(
                {"TOPIC": TOPIC, "GROUP": GROUP}[b.resource],
                b.pattern.name,
                PREFIXED if b.pattern.prefixed else LITERAL,
                b.principal,
                "*",
                OPERATIONS[b.operation],
                ALLOW,
            )
            client = admin._client  # noqa: SLF001 - aiokafka 0.14's admin has no create_acls
            response = await client.send(client.get_random_node(), request)
            for code, message in response.creation_responses:
                if code:
                    failed.append(f"{b}: error {code} {message or ''}".rstrip())
    return failed

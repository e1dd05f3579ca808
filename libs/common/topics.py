"""Kafka topic names. One place, so producers and consumers never disagree."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from common.settings import Settings


class Topic(StrEnum):
    """The suite's shared topics, by what follows the prefix in their names."""

    #: Everything that needs a policy decision, plus compliance's own admin commands.
    COMPLIANCE_COMMANDS = "compliance.commands"
    #: Commands the ledger applies, each signed by its decider: compliance's approved commands
    #: and admin's operator commands; written by those two only (docs/security.md, "Round 5: no
    #: single point of trust").
    LEDGER_COMMANDS = "ledger.commands"
    #: Partner reads of ledger resources (the gateway's): they change nothing, need no authority.
    LEDGER_READS = "ledger.reads"
    #: Daily-cap allowance given back for a transfer the ledger refused or failed (the
    #: ledger's alone: off the commands topic the gateway may write, so that the gateway cannot
    #: give allowance back).
    COMPLIANCE_RELEASES = "compliance.releases"
    WEBHOOKS_COMMANDS = "webhooks.commands"
    #: Domain events (docs/guides/webhooks.md, "Events"), produced by the ledger outbox.
    EVENTS = "events"
    #: Operator changes (key revoked, policy changed, branding changed) broadcast to services.
    CONTROL_EVENTS = "control.events"
    DEAD_LETTERS = "dlq"
    #: Signed chain heads of the ledger's journal (docs/security.md, "Journal anchors, round 2"):
    #: kept forever, never compacted.
    JOURNAL_ANCHORS = "journal.anchors"


#: Topic settings that differ from the suite's defaults, applied when a topic is created.
TOPIC_CONFIGS: dict[Topic, dict[str, str]] = {
    Topic.JOURNAL_ANCHORS: {"retention.ms": "-1", "retention.bytes": "-1", "cleanup.policy": "delete"},
}


class _Named:
    """A :class:`Topics` attribute: that topic's name under the instance's prefix."""

    def __init__(self, topic: Topic) -> None:
        self.topic = topic

    def __get__(self, topics: Topics, owner: type[Topics] | None = None) -> str:
        return topics[self.topic]


@dataclass(frozen=True)
class Topics:
    prefix: str = "sluice"

    compliance_commands = _Named(Topic.COMPLIANCE_COMMANDS)
    compliance_releases = _Named(Topic.COMPLIANCE_RELEASES)
    ledger_commands = _Named(Topic.LEDGER_COMMANDS)
    ledger_reads = _Named(Topic.LEDGER_READS)
    webhooks_commands = _Named(Topic.WEBHOOKS_COMMANDS)
    events = _Named(Topic.EVENTS)
    control_events = _Named(Topic.CONTROL_EVENTS)
    dead_letters = _Named(Topic.DEAD_LETTERS)
    journal_anchors = _Named(Topic.JOURNAL_ANCHORS)

    def __getitem__(self, topic: Topic) -> str:
        return f"{self.prefix}.{topic.value}"

    def configs(self, name: str, default: dict[str, str]) -> dict[str, str]:
        """The settings to create topic ``name`` with: ``default`` unless :data:`TOPIC_CONFIGS`
        says otherwise."""
        for topic, config in TOPIC_CONFIGS.items():
            if self[topic] == name:
                return {**default, **config}
        return default

    def replies(self, instance_id: str) -> str:
        return f"{self.prefix}.replies.{instance_id}"

    def group(self, service: str) -> str:
        """A service's consumer group: instances split partitions. It follows the prefix, so a
        deployment (or a test) under another prefix never joins, nor rebalances, the default one."""
        return f"{self.prefix}-{service}"


class TopicPlan(NamedTuple):
    """One topic as the suite creates it."""

    name: str
    partitions: int
    replication_factor: int
    configs: dict[str, str]


def topic_plan(
    settings: Settings, names: Sequence[str] | None = None, partitions: int | None = None
) -> list[TopicPlan]:
    """The topics ``names`` (every shared one by default) as they are created: ``partitions``
    (else ``SLUICE_KAFKA_TOPIC_PARTITIONS``), the replication factor, ``min.insync.replicas``
    and retention of the settings, and :data:`TOPIC_CONFIGS`' own. What ``python -m sluice
    topics`` creates, and what deploy/k8s's Strimzi overlay declares as KafkaTopics."""
    named = Topics(settings.topic_prefix)
    config = {
        "retention.ms": str(settings.kafka_retention_ms),
        "min.insync.replicas": str(settings.kafka_min_insync_replicas),
    }
    count, rf = partitions or settings.kafka_topic_partitions, settings.kafka_replication_factor
    wanted = [named[topic] for topic in Topic] if names is None else list(names)
    return [TopicPlan(n, count, rf, named.configs(n, config)) for n in wanted]

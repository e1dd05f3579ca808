"""Kafka topic names. One place, so producers and consumers never disagree."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Topics:
    prefix: str = "sluice"

    @property
    def compliance_commands(self) -> str:
        """Everything that needs a policy decision, plus compliance's own admin commands."""
        return f"{self.prefix}.compliance.commands"

    @property
    def ledger_commands(self) -> str:
        """Approved commands and reads of ledger resources."""
        return f"{self.prefix}.ledger.commands"

    @property
    def webhooks_commands(self) -> str:
        return f"{self.prefix}.webhooks.commands"

    @property
    def events(self) -> str:
        """Domain events (contract section 7), produced by the ledger outbox."""
        return f"{self.prefix}.events"

    @property
    def control_events(self) -> str:
        """Operator changes (key revoked, policy changed, branding changed) broadcast to services."""
        return f"{self.prefix}.control.events"

    @property
    def dead_letters(self) -> str:
        return f"{self.prefix}.dlq"

    def replies(self, instance_id: str) -> str:
        return f"{self.prefix}.replies.{instance_id}"

    def group(self, service: str) -> str:
        """A service's consumer group: instances split partitions. It follows the prefix, so a
        deployment (or a test) under another prefix never joins, nor rebalances, the default one."""
        return f"{self.prefix}-{service}"

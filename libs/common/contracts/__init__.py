"""Wire contracts: versioned msgspec structs, one tagged struct per message."""

from common.contracts.base import Command, Ctx, Decision, Envelope, Event, Result, decode, encode
from common.contracts.commands import (
    ComplianceCommand,
    LedgerCommand,
    WebhooksCommand,
)
from common.contracts.events import AnyEvent, ControlEvent

__all__ = [
    "AnyEvent",
    "Command",
    "ComplianceCommand",
    "ControlEvent",
    "Ctx",
    "Decision",
    "Envelope",
    "Event",
    "LedgerCommand",
    "Result",
    "WebhooksCommand",
    "decode",
    "encode",
]

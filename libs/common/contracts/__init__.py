"""Wire contracts: versioned msgspec structs, one tagged struct per message."""

from common.contracts.base import Authority, Command, Ctx, Decision, Envelope, Event, Result, decode, encode
from common.contracts.commands import (
    ComplianceCommand,
    LedgerCommand,
    LedgerRead,
    LedgerWrite,
    WebhooksCommand,
)
from common.contracts.events import AnyEvent, ControlEvent

__all__ = [
    "AnyEvent",
    "Authority",
    "Command",
    "ComplianceCommand",
    "ControlEvent",
    "Ctx",
    "Decision",
    "Envelope",
    "Event",
    "LedgerCommand",
    "LedgerRead",
    "LedgerWrite",
    "Result",
    "WebhooksCommand",
    "decode",
    "encode",
]

"""The AsyncAPI 3.0 document of the suite's Kafka topics, built from the wire contracts.

Why not FastStream's generator: our subscribers take the raw records (the consumer runtime
decodes them with msgspec, in batches, so that poison can be told apart from a bad batch), so
FastStream would describe every payload as ``array<binary>``. The contracts are the truth:
each channel lists the tagged msgspec structs that travel on it, and their JSON Schemas come
from ``msgspec.json.schema_components``. The gateway serves it at ``/schema/asyncapi.json``.
"""

from __future__ import annotations

from typing import Any

import msgspec

from common.broker import DeadLetter
from common.contracts import ComplianceCommand, ControlEvent, LedgerRead, LedgerWrite, Result, WebhooksCommand
from common.contracts.anchors import JournalAnchor
from common.contracts.events import EventRecord
from common.topics import Topics


def _members(union: Any) -> tuple[type, ...]:
    return tuple(getattr(union, "__args__", (union,)))


def _channels_spec(t: Topics) -> list[tuple[str, str, str, Any]]:
    """Each channel: its id, its topic, what travels on it, and the union of its structs."""
    return [
        (
            "complianceCommands",
            t.compliance_commands,
            "Commands needing a policy decision",
            ComplianceCommand,
        ),
        (
            "ledgerCommands",
            t.ledger_commands,
            "Commands the ledger applies, each signed by its decider (compliance or admin)",
            LedgerWrite,
        ),
        ("ledgerReads", t.ledger_reads, "The gateway's reads of ledger resources", LedgerRead),
        ("webhooksCommands", t.webhooks_commands, "Webhook endpoint and delivery commands", WebhooksCommand),
        ("replies", t.replies("{instance}"), "Results, one topic per gateway/admin instance", Result),
        (
            "events",
            t.events,
            "Domain events (the webhook payloads), keyed by tenant; one fact's events in one record",
            EventRecord,
        ),
        ("controlEvents", t.control_events, "Operator changes broadcast to services", ControlEvent),
        ("deadLetters", t.dead_letters, "Messages a consumer gave up on, with their origin", DeadLetter),
        (
            "journalAnchors",
            t.journal_anchors,
            "The ledger's signed journal chain heads, kept forever",
            JournalAnchor,
        ),
    ]


def _message(struct: type) -> dict[str, Any]:
    info = msgspec.inspect.type_info(struct)
    tag = info.tag if isinstance(info, msgspec.inspect.StructType) else None
    return {
        "name": struct.__name__,
        "title": str(tag or struct.__name__),
        "contentType": "application/json",
        "payload": {"$ref": f"#/components/schemas/{struct.__name__}"},
    }


def build_asyncapi(prefix: str = "sluice") -> dict[str, Any]:
    channels_spec = _channels_spec(Topics(prefix))
    types = sorted({m for *_, u in channels_spec for m in _members(u)}, key=lambda c: c.__name__)
    schemas, components = msgspec.json.schema_components(types, ref_template="#/components/schemas/{name}")
    del schemas
    channels: dict[str, Any] = {}
    operations: dict[str, Any] = {}
    messages: dict[str, Any] = {}
    for cid, address, description, union in channels_spec:
        refs = {}
        for m in _members(union):
            messages[m.__name__] = _message(m)
            refs[m.__name__] = {"$ref": f"#/components/messages/{m.__name__}"}
        channels[cid] = {"address": address, "description": description, "messages": refs}
        if "{instance}" in address:
            channels[cid]["parameters"] = {"instance": {"description": "the gateway or admin instance id"}}
        operations[f"publish_{cid}"] = {
            "action": "send",
            "channel": {"$ref": f"#/channels/{cid}"},
            "messages": [{"$ref": f"#/channels/{cid}/messages/{n}"} for n in refs],
        }
    return {
        "asyncapi": "3.0.0",
        "info": {
            "title": "Sluice message contracts",
            "version": "1",
            "description": "Kafka topics of the Sluice suite; headers carry x-request-id and traceparent.",
        },
        "defaultContentType": "application/json",
        "channels": channels,
        "operations": operations,
        "components": {"messages": messages, "schemas": components},
    }

"""Domain events (docs/guides/webhooks.md, "Events") and operator control events.

``data`` of a domain event holds only partner-safe fields: it is what webhooks deliver.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from common.contracts.base import Authority, Event


class CustomerCreated(Event, tag="customer.created"):
    data: dict[str, Any]
    country_code: str | None = None  # internal, not projected to partners


class WalletCreated(Event, tag="wallet.created"):
    data: dict[str, Any]


class VirtualAccountCreated(Event, tag="virtual_account.created"):
    data: dict[str, Any]


class DepositReceived(Event, tag="deposit.received"):
    data: dict[str, Any]


class TransferCreated(Event, tag="transfer.created"):
    data: dict[str, Any]


class TransferUpdated(Event, tag="transfer.updated"):
    data: dict[str, Any]  # carries state and previous_state


class PayoutCreated(Event, tag="payout.created"):
    data: dict[str, Any]


class PayoutUpdated(Event, tag="payout.updated"):
    data: dict[str, Any]


class WebhookEndpointDisabled(Event, tag="webhook_endpoint.disabled"):
    """Told to the tenant's other endpoints when webhooks disables one: ``data`` holds
    ``webhook_id``, ``endpoint_url``, ``reason``, ``failing_since``, ``disabled_at``. Made and
    delivered by the webhooks service itself, so it is not part of ``AnyEvent``."""

    data: dict[str, Any]


AnyEvent = (
    CustomerCreated
    | WalletCreated
    | VirtualAccountCreated
    | DepositReceived
    | TransferCreated
    | TransferUpdated
    | PayoutCreated
    | PayoutUpdated
)
#: One domain event, decoded by one typed decoder (as the consumers' commands are).
EVENTS: msgspec.json.Decoder[AnyEvent] = msgspec.json.Decoder(AnyEvent)


class EventBatch(msgspec.Struct, tag="events.v1", tag_field="type", kw_only=True):
    """The events of one fact in one record, in order: a book transfer created and settled by
    one ledger batch is ``transfer.created`` then two ``transfer.updated``. Published once,
    fetched and decoded once by each group that reads the topic (one record per fact, not per
    event: a book transfer's three events are one message for the broker, not three); each
    event keeps its own id, type and body for webhooks and the events API."""

    tenant_id: str
    events: list[AnyEvent]
    authority: Authority | None = None  # the ledger's signature over the whole record


#: What a record of the events topic holds: one event, or the events of one fact.
EventRecord = AnyEvent | EventBatch
EVENT_RECORDS: msgspec.json.Decoder[EventRecord] = msgspec.json.Decoder(EventRecord)


def unbatched(records: Iterable[EventRecord]) -> list[AnyEvent]:
    """The events of decoded records, in order."""
    out: list[AnyEvent] = []
    for r in records:
        if isinstance(r, EventBatch):
            out.extend(r.events)
        else:
            out.append(r)
    return out


EVENT_TYPES = [
    "customer.created",
    "wallet.created",
    "virtual_account.created",
    "deposit.received",
    "transfer.created",
    "transfer.updated",
    "payout.created",
    "payout.updated",
]

#: What a webhook endpoint can receive (``enabled_events``) and ``GET /v1/events`` lists.
DELIVERED_EVENT_TYPES = [*EVENT_TYPES, "webhook_endpoint.disabled"]


class ControlEvent(msgspec.Struct, tag="control.v1", tag_field="type", kw_only=True):
    """An operator change other services must honour on their next request."""

    kind: str  # api_key.revoked | access_token.revoked | tenant.updated | policy.changed | branding.changed
    tenant_id: str | None = None
    key_hash: str | None = None
    jti: str | None = None  # access_token.revoked
    request_id: str | None = None

"""Webhook events, typed: a union discriminated by ``type`` (docs/guides/webhooks.md, "Events").

``verify_webhook`` returns a :data:`WebhookEvent`; check ``event["type"]`` and the type checker
knows its ``data``::

    if event["type"] == "transfer.updated":
        print(event["data"]["state"], event["data"]["previous_state"])

The data of each type is what the gateway's events carry (partner-safe fields only). An answer's
enums are ``str``: a newer value is kept, and a newer event type arrives as it is (check
``type`` before reading ``data``).
"""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

from sluice_sdk.schemas import Transfer, VirtualAccount

EVENT_TYPES = (
    "customer.created",
    "wallet.created",
    "virtual_account.created",
    "deposit.received",
    "transfer.created",
    "transfer.updated",
    "payout.created",
    "payout.updated",
    "webhook_endpoint.disabled",
)


class CustomerData(TypedDict):
    customer_id: str
    account_type: str
    service_user_id: str


class WalletData(TypedDict):
    wallet_id: str
    deposit_address: str
    symbol: str
    chain: str
    customer_id: str


class DepositData(TypedDict):
    deposit_id: str
    virtual_account_id: str
    wallet_id: str
    amount: str  # decimal string
    currency: str
    credited_amount: str
    credited_currency: str
    state: str
    created_at: str


class TransferUpdatedData(Transfer):
    previous_state: NotRequired[str | None]


class EndpointDisabledData(TypedDict):
    webhook_id: str
    endpoint_url: str
    reason: str
    failing_since: NotRequired[str | None]
    disabled_at: str


class _Envelope(TypedDict):
    id: str  # evt_...: deduplicate on it (deliveries are at least once)
    created_at: str
    api_version: str
    mode: str  # sandbox | production


class CustomerCreatedEvent(_Envelope):
    type: Literal["customer.created"]
    data: CustomerData


class WalletCreatedEvent(_Envelope):
    type: Literal["wallet.created"]
    data: WalletData


class VirtualAccountCreatedEvent(_Envelope):
    type: Literal["virtual_account.created"]
    data: VirtualAccount


class DepositReceivedEvent(_Envelope):
    type: Literal["deposit.received"]
    data: DepositData


class TransferCreatedEvent(_Envelope):
    type: Literal["transfer.created"]
    data: Transfer


class TransferUpdatedEvent(_Envelope):
    type: Literal["transfer.updated"]
    data: TransferUpdatedData


class PayoutCreatedEvent(_Envelope):
    type: Literal["payout.created"]
    data: Transfer


class PayoutUpdatedEvent(_Envelope):
    type: Literal["payout.updated"]
    data: TransferUpdatedData


class WebhookEndpointDisabledEvent(_Envelope):
    type: Literal["webhook_endpoint.disabled"]
    data: EndpointDisabledData


WebhookEvent = (
    CustomerCreatedEvent
    | WalletCreatedEvent
    | VirtualAccountCreatedEvent
    | DepositReceivedEvent
    | TransferCreatedEvent
    | TransferUpdatedEvent
    | PayoutCreatedEvent
    | PayoutUpdatedEvent
    | WebhookEndpointDisabledEvent
)

"""Admin action payloads (contract section 9): one struct per action.

Every struct forbids unknown fields, so a misspelt field is a 400 naming it.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from common.auth import Scope
from common.contracts.branding import WhiteLabel

Mode = Literal["sandbox", "production"]
Rail = Literal["provider_wallet", "stablecoin", "ach", "wire", "sepa", "faster_payments"]
BankRail = Literal["ach", "wire", "sepa", "faster_payments"]
Currency = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z]{3,5}$")]
DecimalText = Annotated[str, msgspec.Meta(pattern=r"^[0-9]{1,13}(\.[0-9]{1,6})?$")]
Id = Annotated[str, msgspec.Meta(min_length=1, max_length=128)]
Label = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
Limit = Annotated[int, msgspec.Meta(ge=1, le=100)]
Cidr = Annotated[str, msgspec.Meta(min_length=1, max_length=64)]
DeliveryStatus = Literal["pending", "succeeded", "dead"]


class Action(msgspec.Struct):
    action: str


class TenantMetadata(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    white_label: WhiteLabel | None = None
    allowed_ips: list[Cidr] | None = None


class UpsertTenant(msgspec.Struct, forbid_unknown_fields=True):
    """By ``tenant_id`` when given (fields left out keep their value), else by ``tenant_name``."""

    action: str
    tenant_id: Id | None = None
    tenant_name: Label | msgspec.UnsetType = msgspec.UNSET
    default_mode: Mode | msgspec.UnsetType = msgspec.UNSET
    rate_limit_per_minute: Annotated[int, msgspec.Meta(ge=1, le=1_000_000)] | msgspec.UnsetType = (
        msgspec.UNSET
    )
    metadata: TenantMetadata | msgspec.UnsetType = msgspec.UNSET


class TenantRef(msgspec.Struct, forbid_unknown_fields=True):
    action: str
    tenant_id: Id


class CreateApiKey(msgspec.Struct, forbid_unknown_fields=True):
    action: str
    tenant_id: Id
    key_label: Label
    scopes: list[Scope]
    mode: Mode | None = None


class RevokeApiKey(msgspec.Struct, forbid_unknown_fields=True):
    action: str
    key_id: Id


class IssueAccessToken(msgspec.Struct, forbid_unknown_fields=True):
    action: str
    tenant_id: Id
    mode: Mode
    scopes: list[Scope]
    ttl_seconds: Annotated[int, msgspec.Meta(ge=60, le=3600)] = 3600


class Route(msgspec.Struct, forbid_unknown_fields=True):
    action: str
    tenant_id: Id
    mode: Mode
    rail: Rail
    currency: Currency


class TransferCap(msgspec.Struct, forbid_unknown_fields=True):
    action: str
    tenant_id: Id
    mode: Mode
    per_transfer: DecimalText
    daily: DecimalText
    review_threshold: DecimalText | None = None


class ExternalAccount(msgspec.Struct, forbid_unknown_fields=True):
    action: str
    tenant_id: Id
    mode: Mode
    customer_id: Id
    rail: BankRail
    currency: Currency
    approved: bool
    external_account_id: Id | None = None
    account_number: Annotated[str, msgspec.Meta(pattern=r"^[0-9]{4,17}$")] | None = None
    routing_number: Annotated[str, msgspec.Meta(pattern=r"^[0-9]{6}$|^[0-9]{9}$")] | None = None
    iban: Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z]{2}[0-9]{2}[A-Za-z0-9 ]{10,36}$")] | None = None
    bic: Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z]{6}[A-Za-z0-9]{2}([A-Za-z0-9]{3})?$")] | None = None


class ReviewTransfer(msgspec.Struct, forbid_unknown_fields=True):
    action: str
    transfer_id: Id
    decision: Literal["approve", "reject"]
    tenant_id: Id | None = None
    mode: Mode | None = None


class SettleTransfer(msgspec.Struct, forbid_unknown_fields=True):
    action: str
    transfer_id: Id
    outcome: Literal["completed", "failed"]
    tenant_id: Id | None = None
    mode: Mode | None = None


class Reconcile(msgspec.Struct, forbid_unknown_fields=True):
    action: str
    tenant_id: Id
    mode: Mode
    limit: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 100


class VerifyJournal(msgspec.Struct, forbid_unknown_fields=True):
    action: str
    tenant_id: Id | None = None
    mode: Mode | None = None


Address = Annotated[str, msgspec.Meta(min_length=1, max_length=128)]
Chain = Annotated[str, msgspec.Meta(min_length=2, max_length=16)]


class AddScreenedAddress(msgspec.Struct, forbid_unknown_fields=True):
    action: str
    chain: Chain
    address: Address
    reason: Annotated[str, msgspec.Meta(min_length=1, max_length=200)]


class ScreenedAddress(msgspec.Struct, forbid_unknown_fields=True):
    action: str
    chain: Chain
    address: Address


class ListScreenedAddresses(msgspec.Struct, forbid_unknown_fields=True):
    action: str
    limit: Annotated[int, msgspec.Meta(ge=1, le=100)] = 50
    starting_after: Annotated[str, msgspec.Meta(max_length=200)] | None = None


class ReplayDelivery(msgspec.Struct, forbid_unknown_fields=True):
    action: str
    delivery_id: Id
    tenant_id: Id | None = None


class ReplayDeliveries(msgspec.Struct, forbid_unknown_fields=True):
    action: str
    webhook_id: Id
    since: Annotated[str, msgspec.Meta(max_length=64)] | None = None  # RFC 3339
    tenant_id: Id | None = None


class EnableWebhook(msgspec.Struct, forbid_unknown_fields=True):
    action: str
    webhook_id: Id
    tenant_id: Id | None = None


class Page(msgspec.Struct, forbid_unknown_fields=True):
    """Cursor paging shared by the list actions: pass ``next_cursor`` back as ``cursor``."""

    action: str
    limit: Limit = 50
    cursor: Annotated[str, msgspec.Meta(max_length=256)] | None = None
    starting_after: Annotated[str, msgspec.Meta(max_length=256)] | None = None

    @property
    def after(self) -> str | None:
        return self.cursor or self.starting_after


class ListDeliveries(Page, forbid_unknown_fields=True):
    tenant_id: Id | None = None
    webhook_id: Id | None = None
    status: DeliveryStatus | None = None


class ListDecisions(Page, forbid_unknown_fields=True):
    tenant_id: Id | None = None


class ListTenants(Page, forbid_unknown_fields=True):
    pass


class ListAuditLog(Page, forbid_unknown_fields=True):
    actor: Label | None = None
    audit_action: Label | None = None
    target: Id | None = None


class ListDeadLetters(Page, forbid_unknown_fields=True):
    service: Label | None = None


class RedriveDeadLetters(msgspec.Struct, forbid_unknown_fields=True):
    action: str
    dead_letter_ids: Annotated[list[Label], msgspec.Meta(min_length=1, max_length=1000)] | None = None
    all: bool = False

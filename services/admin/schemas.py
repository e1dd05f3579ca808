"""Admin action payloads (contract section 9): one struct per action.

Every struct forbids unknown fields, so a misspelt field is a 400 naming it.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from common.addresses import CHAINS
from common.auth import Scope
from common.contracts.branding import WhiteLabel
from common.validation import ci_pattern

Mode = Literal["sandbox", "production"]
Rail = Literal["provider_wallet", "stablecoin", "ach", "wire", "sepa", "faster_payments"]
BankRail = Literal["ach", "wire", "sepa", "faster_payments"]
Currency = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z]{3,5}$")]
DecimalText = Annotated[str, msgspec.Meta(pattern=r"^[0-9]{1,13}(\.[0-9]{1,6})?$")]
# Ids are the suite's own (visible ASCII); labels are any text PostgreSQL can store (no NUL;
# a lone surrogate never gets this far: the JSON decoder refuses it). Fuzzing found an id
# with a NUL relayed to the webhooks service, which could not store it: the operator waited
# for a 503 instead of a 400 naming the field. The pattern once also named the surrogate
# range, which schemathesis cannot translate: it dropped the pattern, sent NULs as valid and
# failed the run on the 400 (seed-dependent).
Id = Annotated[str, msgspec.Meta(min_length=1, max_length=128, pattern=r"^[\x21-\x7e]+$")]
Label = Annotated[str, msgspec.Meta(min_length=1, max_length=200, pattern=r"^[^\x00]+$")]
Limit = Annotated[int, msgspec.Meta(ge=1, le=100)]
_V4 = r"((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_H = "[0-9a-fA-F]{1,4}"
_V6 = (  # full, and each place the "::" can stand (no zone, no embedded IPv4)
    f"({_H}:){{7}}{_H}|({_H}:){{1,7}}:|({_H}:){{1,6}}:{_H}|({_H}:){{1,5}}(:{_H}){{1,2}}"
    f"|({_H}:){{1,4}}(:{_H}){{1,3}}|({_H}:){{1,3}}(:{_H}){{1,4}}|({_H}:){{1,2}}(:{_H}){{1,5}}"
    f"|{_H}:(:{_H}){{1,6}}|:((:{_H}){{1,7}}|:)"
)
# An address or network, as the document promises it: an IPv4 or IPv6 address with an optional
# prefix length. Schemathesis generated schema-valid strings that were no network before.
Cidr = Annotated[
    str,
    msgspec.Meta(
        min_length=1,
        max_length=64,
        pattern=f"^({_V4}(/(3[0-2]|[12]?[0-9]))?|({_V6})(/(12[0-8]|1[01][0-9]|[1-9]?[0-9]))?)$",
        description="an IPv4 or IPv6 address or network (CIDR)",
    ),
]
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


Address = Annotated[
    str,
    msgspec.Meta(
        min_length=1,
        max_length=128,
        description="an address on the chain: EVM 0x + 40 hex (EIP-55 checksum if mixed case),"
        " SOL base58 of 32 bytes, TRON base58check starting with T",
    ),
]
Chain = Annotated[
    str, msgspec.Meta(pattern=ci_pattern(CHAINS), description="chain, case-insensitive: " + ", ".join(CHAINS))
]


class AddScreenedAddress(msgspec.Struct, forbid_unknown_fields=True):
    action: str
    chain: Chain
    address: Address
    reason: Label


class ScreenedAddress(msgspec.Struct, forbid_unknown_fields=True):
    action: str
    chain: Chain
    address: Address


Cursor = Annotated[str, msgspec.Meta(max_length=200, pattern="^[^\\x00]*:[^\\x00]*$")]


class ListScreenedAddresses(msgspec.Struct, forbid_unknown_fields=True):
    action: str
    limit: Annotated[int, msgspec.Meta(ge=1, le=100)] = 50
    # the previous page's next_cursor, "<chain>:<address>"
    starting_after: Cursor | None = None


class ReplayDelivery(msgspec.Struct, forbid_unknown_fields=True):
    action: str
    delivery_id: Id
    tenant_id: Id | None = None


class ReplayDeliveries(msgspec.Struct, forbid_unknown_fields=True):
    action: str
    webhook_id: Id
    since: Annotated[str, msgspec.Meta(max_length=64, extra_json_schema={"format": "date-time"})] | None = (
        None
    )
    tenant_id: Id | None = None


class EnableWebhook(msgspec.Struct, forbid_unknown_fields=True):
    action: str
    webhook_id: Id
    tenant_id: Id | None = None


# What each list hands out as next_cursor, so the document promises exactly what is accepted.
IdCursor = Annotated[str, msgspec.Meta(max_length=256, pattern=r"^[\x21-\x7e]+$", description="next_cursor")]
SeqCursor = Annotated[str, msgspec.Meta(pattern=r"^[0-9]{1,18}$", description="next_cursor: a position")]
UuidCursor = Annotated[
    str,
    msgspec.Meta(
        pattern=r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$",
        description="next_cursor: a tenant id",
    ),
]


class Page(msgspec.Struct, forbid_unknown_fields=True):
    """Cursor paging shared by the list actions: pass ``next_cursor`` back as ``cursor``."""

    action: str
    limit: Limit = 50
    cursor: IdCursor | None = None
    starting_after: IdCursor | None = None

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
    cursor: UuidCursor | None = None
    starting_after: UuidCursor | None = None


class ListAuditLog(Page, forbid_unknown_fields=True):
    cursor: SeqCursor | None = None
    starting_after: SeqCursor | None = None
    actor: Label | None = None
    audit_action: Label | None = None
    target: Id | None = None


class ListDeadLetters(Page, forbid_unknown_fields=True):
    cursor: SeqCursor | None = None
    starting_after: SeqCursor | None = None
    service: Label | None = None


class RedriveDeadLetters(msgspec.Struct, forbid_unknown_fields=True):
    action: str
    dead_letter_ids: Annotated[list[Label], msgspec.Meta(min_length=1, max_length=1000)] | None = None
    all: bool = False

"""Admin action payloads (docs/operations.md, "The administration endpoint"): one struct per
action.

Every struct forbids unknown fields, so a misspelt field is a 400 naming it.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from common.addresses import CHAINS
from common.auth import JTI_PATTERN, Scope
from common.contracts.branding import WhiteLabel
from common.validation import SPACE, ci_pattern

Mode = Literal["sandbox", "production"]
Rail = Literal["provider_wallet", "stablecoin", "ach", "wire", "sepa", "faster_payments"]
BankRail = Literal["ach", "wire", "sepa", "faster_payments"]
Currency = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z]{3,5}$(?!\n)")]
DecimalText = Annotated[str, msgspec.Meta(pattern=r"^[0-9]{1,13}(\.[0-9]{1,6})?$(?!\n)")]
# Ids are the suite's own (visible ASCII); labels are any text PostgreSQL can store (no NUL;
# a lone surrogate never gets this far: the JSON decoder refuses it). Fuzzing found an id
# with a NUL relayed to the webhooks service, which could not store it: the operator waited
# for a 503 instead of a 400 naming the field. The pattern once also named the surrogate
# range, which schemathesis cannot translate: it dropped the pattern, sent NULs as valid and
# failed the run on the 400 (seed-dependent).
Id = Annotated[str, msgspec.Meta(min_length=1, max_length=128, pattern=r"^[\x21-\x7e]+$(?!\n)")]
Label = Annotated[str, msgspec.Meta(min_length=1, max_length=200, pattern=r"^[^\x00]+$(?!\n)")]
# A screening reason is kept without surrounding whitespace and must say something
# (compliance.screening strips it): at least one character that is not whitespace.
Reason = Annotated[
    str, msgspec.Meta(min_length=1, max_length=200, pattern=rf"^[^\x00]*[^\x00{SPACE}][^\x00]*$(?!\n)")
]
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
        pattern=f"^({_V4}(/(3[0-2]|[12]?[0-9]))?|({_V6})(/(12[0-8]|1[01][0-9]|[1-9]?[0-9]))?)$(?!\\n)",
        description="an IPv4 or IPv6 address or network (CIDR)",
    ),
]
DeliveryStatus = Literal["pending", "succeeded", "dead"]


class Action(msgspec.Struct):
    action: str


class Body(Action, forbid_unknown_fields=True):
    """An action's body; its subclasses inherit the refusal of unknown fields."""


class TenantMetadata(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    white_label: WhiteLabel | None = None
    allowed_ips: list[Cidr] | None = None


class UpsertTenant(Body):
    """By ``tenant_id`` when given (fields left out keep their value), else by ``tenant_name``."""

    tenant_id: Id | None = None
    tenant_name: Label | msgspec.UnsetType = msgspec.UNSET
    default_mode: Mode | msgspec.UnsetType = msgspec.UNSET
    rate_limit_per_minute: Annotated[int, msgspec.Meta(ge=1, le=1_000_000)] | msgspec.UnsetType = (
        msgspec.UNSET
    )
    metadata: TenantMetadata | msgspec.UnsetType = msgspec.UNSET


class TenantRef(Body):
    tenant_id: Id


class TenantModeRef(TenantRef):
    """An action on one tenant's sandbox or production."""

    mode: Mode


class CreateApiKey(TenantRef):
    key_label: Label
    scopes: list[Scope]
    mode: Mode | None = None


class RevokeApiKey(Body):
    key_id: Id


class RevokeAccessToken(Body):
    jti: Annotated[str, msgspec.Meta(pattern=JTI_PATTERN, description="the access token's jti claim")]


class IssueAccessToken(TenantModeRef):
    scopes: list[Scope]
    ttl_seconds: Annotated[int, msgspec.Meta(ge=60, le=3600)] = 3600


class Route(TenantModeRef):
    rail: Rail
    currency: Currency


class TransferCap(TenantModeRef):
    per_transfer: DecimalText
    daily: DecimalText
    review_threshold: DecimalText | None = None


class ExternalAccount(TenantModeRef):
    customer_id: Id
    rail: BankRail
    currency: Currency
    approved: bool
    external_account_id: Id | None = None
    account_number: Annotated[str, msgspec.Meta(pattern=r"^[0-9]{4,17}$(?!\n)")] | None = None
    routing_number: Annotated[str, msgspec.Meta(pattern=r"^[0-9]{6}$(?!\n)|^[0-9]{9}$(?!\n)")] | None = None
    iban: Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z]{2}[0-9]{2}[A-Za-z0-9 ]{10,36}$(?!\n)")] | None = (
        None
    )
    bic: (
        Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z]{6}[A-Za-z0-9]{2}([A-Za-z0-9]{3})?$(?!\n)")] | None
    ) = None


class Reconcile(TenantModeRef):
    limit: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 100


class TenantNarrowed(Body, kw_only=True):
    """An action whose ``tenant_id`` is optional and only narrows it (a transfer or a delivery
    names its tenant already; a check without one covers every tenant). Keyword-only, so it
    follows the subclass's own fields, as the document lists them."""

    tenant_id: Id | None = None


class TenantModeNarrowed(TenantNarrowed, kw_only=True):
    mode: Mode | None = None


class ReviewTransfer(TenantModeNarrowed):
    transfer_id: Id
    decision: Literal["approve", "reject"]


class SettleTransfer(TenantModeNarrowed):
    transfer_id: Id
    outcome: Literal["completed", "failed"]


class VerifyJournal(TenantModeNarrowed):
    """Check the journal's hash chains: all of them, or one tenant's (and one mode's) when given."""


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


class ScreenedAddress(Body):
    chain: Chain
    address: Address


class AddScreenedAddress(ScreenedAddress):
    reason: Reason


Cursor = Annotated[str, msgspec.Meta(max_length=200, pattern=r"^[^\x00]*:[^\x00]*$(?!\n)")]


class ListScreenedAddresses(Body):
    limit: Annotated[int, msgspec.Meta(ge=1, le=100)] = 50
    # the previous page's next_cursor, "<chain>:<address>"
    starting_after: Cursor | None = None


class ReplayDelivery(TenantNarrowed):
    delivery_id: Id


class ReplayDeliveries(TenantNarrowed):
    webhook_id: Id
    since: Annotated[str, msgspec.Meta(max_length=64, extra_json_schema={"format": "date-time"})] | None = (
        None
    )


class EnableWebhook(TenantNarrowed):
    webhook_id: Id


# What each list hands out as next_cursor, so the document promises exactly what is accepted.
IdCursor = Annotated[
    str, msgspec.Meta(max_length=256, pattern=r"^[\x21-\x7e]+$(?!\n)", description="next_cursor")
]
SeqCursor = Annotated[
    str, msgspec.Meta(pattern=r"^[0-9]{1,18}$(?!\n)", description="next_cursor: a position")
]
UuidCursor = Annotated[
    str,
    msgspec.Meta(
        pattern=r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$(?!\n)",
        description="next_cursor: a tenant id",
    ),
]


class Page(Body):
    """Cursor paging shared by the list actions: pass ``next_cursor`` back as ``cursor``."""

    limit: Limit = 50
    cursor: IdCursor | None = None
    starting_after: IdCursor | None = None

    @property
    def after(self) -> str | None:
        return self.cursor or self.starting_after


class TenantPage(Page):
    """A list of every tenant's rows, or of one tenant's when ``tenant_id`` is given."""

    tenant_id: Id | None = None


class ListDeliveries(TenantPage):
    webhook_id: Id | None = None
    status: DeliveryStatus | None = None


class ListDecisions(TenantPage):
    """The compliance decision log, newest first."""


class ListTenants(Page):
    cursor: UuidCursor | None = None
    starting_after: UuidCursor | None = None


class SeqPage(Page):
    """A list cursored by position (the audit log, the dead letters)."""

    cursor: SeqCursor | None = None
    starting_after: SeqCursor | None = None


class ListAuditLog(SeqPage):
    actor: Label | None = None
    audit_action: Label | None = None
    target: Id | None = None


class ListDeadLetters(SeqPage):
    service: Label | None = None


class RedriveDeadLetters(Body):
    dead_letter_ids: Annotated[list[Label], msgspec.Meta(min_length=1, max_length=1000)] | None = None
    all: bool = False


class ApproveAction(Body):
    """A second approver carries out a proposal (four eyes)."""

    action_id: Id


class ListPendingActions(Body):
    limit: Limit = 50

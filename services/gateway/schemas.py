"""Partner request and response bodies (docs/reference/index.md) as msgspec structs.

The structs validate shape, types and patterns (so ``details.field`` names the field) and are
the source of the OpenAPI document. Cross-field rules (rail/currency pairs, amount precision)
live in :mod:`gateway.rules`. Codes that are case-insensitive on input use a case-insensitive
pattern, so the schema and the server accept exactly the same strings.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from common.addresses import CHAINS
from common.contracts.events import DELIVERED_EVENT_TYPES
from common.money import FIATS, STABLECOINS
from common.validation import END, SPACE, ci_pattern

WALLET_RAILS = ("provider_wallet", "stablecoin")
FIAT_RAILS = ("ach", "wire", "sepa", "faster_payments")


def _ci_meta(values: tuple[str, ...], what: str) -> msgspec.Meta:
    return msgspec.Meta(
        pattern=ci_pattern(values), description=f"{what}, case-insensitive: {', '.join(values)}"
    )


Symbol = Annotated[str, _ci_meta(STABLECOINS, "stablecoin symbol")]
Chain = Annotated[str, _ci_meta(CHAINS, "chain")]
Fiat = Annotated[str, _ci_meta(FIATS, "fiat currency")]
AnyCurrency = Annotated[str, _ci_meta(STABLECOINS + FIATS, "currency")]
Rail = Literal["provider_wallet", "stablecoin", "ach", "wire", "sepa", "faster_payments"]
WalletRail = Literal["provider_wallet", "stablecoin"]

# An address as the OpenAPI ``format: email`` means it (RFC 5321 dot-atom local part, a
# hostname with a letters-only top-level label), so the validator and the document agree.
EMAIL_PATTERN = (
    r"^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*"
    r"@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}$(?!\n)"
)
Email = Annotated[
    str, msgspec.Meta(pattern=EMAIL_PATTERN, max_length=254, extra_json_schema={"format": "email"})
]
Country = Annotated[str, msgspec.Meta(pattern=r"^[A-Z]{2}$(?!\n)")]
E164 = Annotated[str, msgspec.Meta(pattern=r"^\+[1-9][0-9]{1,14}$(?!\n)")]
# No NUL: PostgreSQL text cannot store it (the ledger would fail the command with a 502).
Text = Annotated[str, msgspec.Meta(min_length=1, max_length=200, pattern=r"^[^\x00]*$(?!\n)")]
Id = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9_\-]{1,128}$(?!\n)")]
Address = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9]{16,128}$(?!\n)")]
Amount = Annotated[
    str,
    msgspec.Meta(
        # > 0 and <= 1e12, at most 6 decimals (gateway.openapi.rules.amount_pattern(6)).
        pattern=r"^([1-9][0-9]{0,11}(\.[0-9]{1,6})?|1000000000000(\.0{1,6})?"
        r"|0\.([1-9][0-9]{0,5}|0[1-9][0-9]{0,4}|00[1-9][0-9]{0,3}|000[1-9][0-9]{0,2}|0000[1-9][0-9]?|00000[1-9]))$(?!\n)",
        description="decimal string > 0 and <= 1e12; at most 6 decimals for stablecoins, 2 for fiat",
    ),
]
Uri = Annotated[
    str,
    msgspec.Meta(
        pattern=rf"^[Hh][Tt][Tt][Pp][Ss]?://[^{SPACE}/?#@]+(/[^{SPACE}]*)?$(?!\n)",
        max_length=2048,
        extra_json_schema={"format": "uri"},
    ),
]
# 8-256 printable ASCII characters, no space first or last: HTTP drops spaces around a header
# value, so a key that had them would arrive shorter (or different from the body's copy).
IDEMPOTENCY_KEY_PATTERN = r"^[\x21-\x7e][\x20-\x7e]{6,254}[\x21-\x7e]$(?!\n)"
# A transfer's or payout's body repeats its key (docs/guides/idempotency.md); no JSON Schema can tie
# a body field to a header, so the document says it here and in the operation's description.
BodyIdempotencyKey = Annotated[
    str,
    msgspec.Meta(
        pattern=IDEMPOTENCY_KEY_PATTERN,
        description="must equal the request's Idempotency-Key header (else 400 naming idempotency_key)",
    ),
]

_STRICT = {"forbid_unknown_fields": True, "kw_only": True}


# ---- requests ----


class _CustomerFields(msgspec.Struct, **_STRICT):
    email: Email
    country_code: Country
    service_user_id: Text
    registration_number: Text | None = None
    phone_e164: E164 | None = None


class IndividualCustomerCreate(
    _CustomerFields, tag_field="account_type", tag="individual", forbid_unknown_fields=True, kw_only=True
):
    """An individual: ``full_name`` is required."""

    full_name: Text
    company_name: Text | None = None


class BusinessCustomerCreate(
    _CustomerFields, tag_field="account_type", tag="business", forbid_unknown_fields=True, kw_only=True
):
    """A business: ``company_name`` is required."""

    company_name: Text
    full_name: Text | None = None


# A union tagged by ``account_type``: the document states each case as its own schema, so a
# generated type requires ``full_name`` of an individual as the server does.
CustomerCreate = IndividualCustomerCreate | BusinessCustomerCreate
# Request bodies that are unions, by the name the document gives them.
UNIONS: dict[str, Any] = {"CustomerCreate": CustomerCreate}


def customer_fields(p: CustomerCreate) -> dict[str, Any]:
    """The request's fields, ``account_type`` (the tag, not an attribute) included."""
    return {"account_type": type(p).__struct_config__.tag, **msgspec.structs.asdict(p)}


class WalletCreate(msgspec.Struct, **_STRICT):
    customer_id: Id
    symbol: Symbol
    chain: Chain


class VADestinationIn(msgspec.Struct, **_STRICT):
    """Either ``{rail, currency, address}`` or ``{payment_rail, currency, provider_wallet_id |
    address}``: a wallet of the same customer; ``currency`` is the wallet's symbol."""

    currency: Symbol
    rail: WalletRail | None = None
    payment_rail: WalletRail | None = None
    address: Address | None = None
    provider_wallet_id: Id | None = None


class VirtualAccountCreate(msgspec.Struct, **_STRICT):
    customer_id: Id
    currency: Fiat
    destination: VADestinationIn


class BankAccountIn(msgspec.Struct, **_STRICT):
    account_number: Annotated[str, msgspec.Meta(pattern=r"^[0-9]{4,17}$(?!\n)")] | None = None
    routing_number: Annotated[str, msgspec.Meta(pattern=r"^[0-9]{6,9}$(?!\n)")] | None = None
    iban: (
        Annotated[
            str,
            msgspec.Meta(
                # 15-34 characters (ISO 13616), check digits verified (mod 97)
                pattern=r"^[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}$(?!\n)",
                description="an IBAN whose check digits are right (ISO 13616 mod 97)",
            ),
        ]
        | None
    ) = None
    bic: Annotated[str, msgspec.Meta(pattern=r"^[A-Z0-9]{8}([A-Z0-9]{3})?$(?!\n)")] | None = None


class PartyIn(msgspec.Struct, **_STRICT):
    payment_rail: Rail
    currency: AnyCurrency
    chain: Chain | None = None
    amount: Amount | None = None
    customer_id: Id | None = None
    from_address: Address | None = None
    address: Address | None = None
    provider_wallet_id: Id | None = None
    external_account_id: Id | None = None
    deposit_id: Id | None = None
    bank_account: BankAccountIn | None = None


# 0-100 with at most 4 decimal places, as a decimal string or a JSON number (rules.py bounds
# the number: the float here is only its shape, the value is read from the decoded Decimal).
PERCENT_PATTERN = r"^(100(\.0{1,4})?|[0-9]{1,2}(\.[0-9]{1,4})?)$(?!\n)"
Percentage = (
    Annotated[str, msgspec.Meta(pattern=PERCENT_PATTERN, description="decimal string, 0-100, 4 places")]
    | Annotated[float, msgspec.Meta(ge=0, le=100, extra_json_schema={"multipleOf": 0.0001})]
)


class DeveloperFeeIn(msgspec.Struct, **_STRICT):
    percentage: Percentage | None = None
    flat_amount: Amount | None = None


class TransferCreate(msgspec.Struct, **_STRICT):
    source: PartyIn
    destination: PartyIn
    idempotency_key: BodyIdempotencyKey
    developer_fee: DeveloperFeeIn | None = None


EventType = Annotated[
    str,
    msgspec.Meta(
        pattern="^(" + "|".join(t.replace(".", "\\.") for t in DELIVERED_EVENT_TYPES) + ")" + END,
        description="an event type: " + ", ".join(DELIVERED_EVENT_TYPES),
    ),
]


EventTypes = Annotated[list[EventType], msgspec.Meta(min_length=1, max_length=len(DELIVERED_EVENT_TYPES))]


class WebhookCreate(msgspec.Struct, **_STRICT):
    endpoint_url: Uri
    # Only these types are delivered to the endpoint; absent: every type.
    enabled_events: EventTypes | None = None


class WebhookUpdate(msgspec.Struct, **_STRICT):
    """At least one field; a field left out (or null) is kept. A new URL is vetted as at
    creation; ``disabled`` stops deliveries at once (pending ones end), ``enabled`` resumes."""

    endpoint_url: Uri | None = None
    enabled_events: EventTypes | None = None
    status: Literal["enabled", "disabled"] | None = None


class SandboxDepositCreate(msgspec.Struct, **_STRICT):
    virtual_account_id: Id
    amount: Amount


class Empty(msgspec.Struct, **_STRICT):
    """No fields; an empty body is accepted too."""


class ListQuery(msgspec.Struct, **_STRICT):
    limit: Annotated[int, msgspec.Meta(ge=1, le=100)] = 10
    starting_after: Id | None = None


class StatementQuery(ListQuery, **_STRICT):
    """A statement's pages are cursored by journal position: ``next_cursor``, digits only."""

    starting_after: (
        Annotated[
            str, msgspec.Meta(pattern=r"^[0-9]{1,18}$(?!\n)", description="next_cursor of the previous page")
        ]
        | None
    ) = None


class EventListQuery(ListQuery, **_STRICT):
    """Events by ``sequence``: newest first, or oldest first with ``order=asc``; a page starts
    after ``starting_after`` or ends before ``ending_before`` (event ids), not both."""

    type: EventType | None = None
    order: Annotated[
        Literal["desc", "asc"],
        msgspec.Meta(description="desc: newest first (the default); asc: oldest first"),
    ] = "desc"
    ending_before: Id | None = None


class HealthQuery(msgspec.Struct, **_STRICT):
    pass


# ---- responses (the services answer exactly these shapes) ----
# Every field an answer carries is declared here, and a field every answer carries is required:
# tests/support/conformance.py holds each answer the integration tests receive to these schemas
# with no property beyond them, so the SDKs' types (generated from them) can read every field.
# A create answers the whole object, as its retrieve does.

Nullable = str | None
Timestamp = Annotated[str, msgspec.Meta(description="RFC 3339, UTC")]
Money = Annotated[str, msgspec.Meta(description="a decimal string in the currency's units")]


class Customer(msgspec.Struct, kw_only=True):
    customer_id: str
    provider: Literal["service"]
    account_type: Literal["individual", "business"]
    email: str
    country_code: str
    service_user_id: str
    full_name: Nullable
    company_name: Nullable
    registration_number: Nullable
    phone_e164: Nullable
    created_at: Timestamp


class Wallet(msgspec.Struct, kw_only=True):
    wallet_id: str
    customer_id: str
    deposit_address: str
    symbol: str
    chain: str
    available_balance: Money
    held_balance: Money
    created_at: Timestamp


class VirtualAccountDestination(msgspec.Struct, kw_only=True):
    """The wallet deposits convert into."""

    rail: Literal["provider_wallet", "stablecoin"]
    currency: str
    address: str
    provider_wallet_id: str


class VirtualAccount(msgspec.Struct, kw_only=True):
    virtual_account_id: str
    customer_id: str
    currency: str
    account_number: Nullable
    routing_number: Nullable
    iban: Nullable
    bic: Nullable
    bank_name: Nullable
    destination: VirtualAccountDestination
    created_at: Timestamp


class TransferBankAccount(msgspec.Struct, kw_only=True):
    account_number: str | msgspec.UnsetType = msgspec.UNSET
    routing_number: str | msgspec.UnsetType = msgspec.UNSET
    iban: str | msgspec.UnsetType = msgspec.UNSET
    bic: str | msgspec.UnsetType = msgspec.UNSET


class TransferParty(msgspec.Struct, kw_only=True):
    """A transfer's source or destination as it was requested (codes upper-case); a field the
    request left out is absent."""

    payment_rail: str
    currency: str
    chain: str | msgspec.UnsetType = msgspec.UNSET
    amount: Money | msgspec.UnsetType = msgspec.UNSET
    customer_id: str | msgspec.UnsetType = msgspec.UNSET
    from_address: str | msgspec.UnsetType = msgspec.UNSET
    address: str | msgspec.UnsetType = msgspec.UNSET
    provider_wallet_id: str | msgspec.UnsetType = msgspec.UNSET
    external_account_id: str | msgspec.UnsetType = msgspec.UNSET
    deposit_id: str | msgspec.UnsetType = msgspec.UNSET
    bank_account: TransferBankAccount | msgspec.UnsetType = msgspec.UNSET


class TransferDeveloperFee(msgspec.Struct, kw_only=True):
    """The developer fee as requested; the percentage as a decimal string."""

    percentage: str | msgspec.UnsetType = msgspec.UNSET
    flat_amount: Money | msgspec.UnsetType = msgspec.UNSET


class Transfer(msgspec.Struct, kw_only=True):
    """A transfer or a payout; ``developer_fee`` and ``developer_fee_amount`` only when it
    carries a developer fee."""

    transfer_id: str
    state: str
    provider: Literal["service"]
    source: TransferParty
    destination: TransferParty
    amount: Money
    currency: str
    idempotency_key: str
    created_at: Timestamp
    updated_at: Timestamp
    developer_fee: TransferDeveloperFee | msgspec.UnsetType = msgspec.UNSET
    developer_fee_amount: Money | msgspec.UnsetType = msgspec.UNSET


class Webhook(msgspec.Struct, kw_only=True):
    webhook_id: str
    endpoint_url: str
    # deleted: only in the answer to DELETE (afterwards the endpoint is not found)
    status: Literal["enabled", "disabled", "deleted"]
    disabled_reason: Annotated[
        Nullable,
        msgspec.Meta(
            description="why it is disabled: failing_without_success (disabled automatically) or "
            "disabled_by_partner; null while enabled"
        ),
    ]
    created_at: Timestamp
    enabled_events: Annotated[
        list[str], msgspec.Meta(description="the event types delivered to it (every type unless narrowed)")
    ]


class WebhookCreated(Webhook, kw_only=True):
    """A new endpoint with its signing secret, shown only in this answer."""

    signing_secret: str


class WebhookSecretRotated(WebhookCreated, kw_only=True):
    """The endpoint with its new signing secret (shown only here); the previous secret keeps
    signing beside it until ``previous_secret_expires_at``."""

    previous_secret_expires_at: Timestamp


class WalletTransaction(msgspec.Struct, kw_only=True):
    entry_id: str
    kind: Literal["deposit", "transfer", "fee", "release"]
    direction: Literal["credit", "debit"]
    amount: str
    balance_after: str
    created_at: str
    transfer_id: str | msgspec.UnsetType = msgspec.UNSET
    deposit_id: str | msgspec.UnsetType = msgspec.UNSET


class FeeBalance(msgspec.Struct, kw_only=True):
    currency: str
    available_balance: str


class EventEnvelope(msgspec.Struct, kw_only=True):
    """Exactly the body delivered to webhook endpoints for this event (docs/guides/webhooks.md, "Events")."""

    id: str
    type: str
    created_at: str
    api_version: str
    mode: str
    sequence: Annotated[
        int,
        msgspec.Meta(
            ge=1,
            description="strictly increasing per tenant and mode, in the order events were stored;"
            " may skip numbers",
        ),
    ]
    data: dict[str, Any]


class SandboxDepositReceived(msgspec.Struct, kw_only=True):
    """A simulated fiat deposit, credited 1:1 to the virtual account's wallet."""

    deposit_id: str
    virtual_account_id: str
    wallet_id: str
    amount: Money
    currency: str
    credited_amount: Money
    credited_currency: str
    state: Literal["completed"]
    created_at: Timestamp


class HealthSnapshot(msgspec.Struct):
    request_id: str
    route: str
    tenant_id: str
    tenant_name: str
    mode: Literal["sandbox", "production"]
    rate_limit_per_minute: int
    remaining: int
    reset_at: str
    gateway: str
    white_label: dict[str, Any] | None


class ErrorObject(msgspec.Struct, kw_only=True):
    code: Literal[
        "invalid_request",
        "unauthorized",
        "forbidden",
        "not_found",
        "idempotency_key_required",
        "idempotency_replay_mismatch",
        "rate_limited",
        "internal_error",
        "provider_error",
        "provider_unavailable",
    ]
    message: str
    details: dict[str, Any] | msgspec.UnsetType = msgspec.UNSET


class ErrorEnvelope(msgspec.Struct, kw_only=True):
    success: Literal[False]
    error: ErrorObject

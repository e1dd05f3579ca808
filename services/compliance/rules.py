"""Pure policy rules (docs/failure-model.md, "Fail-closed rules"). No I/O: facts in, verdict
out.

The daily cap is the one rule that needs the store at decision time (it must be exact under
concurrency); :func:`check_transfer` checks everything else and the service then takes the
amount from the day's allowance with one conditional upsert.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from common.errors import ErrorCode, Reason

RESTRICTED_COUNTRIES = frozenset({"DZ", "BI", "CN", "JP", "TN"})
PAYMENT_RAILS = frozenset({"provider_wallet", "stablecoin", "ach", "wire", "sepa", "faster_payments"})


@dataclass(frozen=True)
class Verdict:
    outcome: str  # allow | review | refuse
    rule: str
    reason: str | None = None
    message: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    code: str = ErrorCode.FORBIDDEN

    @property
    def refused(self) -> bool:
        return self.outcome == "refuse"


ALLOW_DEFAULT = Verdict("allow", "default_allow")


@dataclass(frozen=True)
class Cap:
    per_transfer: Decimal
    daily: Decimal
    review_threshold: Decimal | None
    source: str  # tenant | sandbox_default

    def as_inputs(self) -> dict[str, Any]:
        return {
            "per_transfer": str(self.per_transfer),
            "daily": str(self.daily),
            "review_threshold": None if self.review_threshold is None else str(self.review_threshold),
            "source": self.source,
        }


@dataclass(frozen=True)
class ExternalAccount:
    external_account_id: str
    customer_id: str
    rail: str
    currency: str
    approved: bool


@dataclass(frozen=True)
class PartyFacts:
    role: str  # source | destination
    party_id: str
    customer_id: str | None
    country: str | None  # None: unknown to the registry (the ledger answers not_found)


@dataclass(frozen=True)
class TransferFacts:
    mode: str
    live_enabled: bool
    kind: str  # transfer | payout
    amount: Decimal
    currency: str
    route: tuple[str, str]
    route_approved: bool
    parties: list[PartyFacts]
    source_customer_id: str | None
    external_account_id: str | None
    external_account: ExternalAccount | None
    cap: Cap | None


def refuse(rule: str, reason: str, message: str, **details: Any) -> Verdict:
    return Verdict("refuse", rule, reason, message, details)


def tenant_disabled() -> Verdict:
    """An operator disabled the tenant (disable_tenant): nothing new is decided for it; money
    arriving for it is still credited (deposits are not refused here)."""
    return refuse("tenant_status", "tenant_disabled", "the tenant is disabled")


def transfer_id_reused() -> Verdict:
    """The transfer id is held by another command (a decision or a hold of its own): one
    transfer id names one command, so whatever the ledger later says about that id is about
    that command, and a release for this one can give nothing of it back."""
    return refuse(
        "transfer_id",
        Reason.TRANSFER_ID_REUSED,
        "the transfer id already names another command's transfer",
        field="transfer_id",
    )


def address_screened(address: str) -> Verdict:
    """The destination is on the operators' screening list: fail closed."""
    return refuse(
        "address_screening",
        Reason.ADDRESS_SCREENED,
        "the destination address is screened",
        field="destination.address",
    )


def parse_amount(text: str) -> Decimal | None:
    try:
        value = Decimal(text)
    except (InvalidOperation, TypeError, ValueError):
        return None
    return value if value.is_finite() and value > 0 else None


def invalid_amount(text: str) -> Verdict:
    return Verdict(
        "refuse",
        "amount",
        None,
        f"amount {text!r} is not a decimal amount above zero",
        {"field": "source.amount"},
        ErrorCode.INVALID_REQUEST,
    )


def customer_jurisdiction(country_code: str) -> Verdict:
    country = country_code.upper()
    if country in RESTRICTED_COUNTRIES:
        return refuse(
            "jurisdiction",
            Reason.JURISDICTION_RESTRICTED,
            f"services are unavailable for customers located in {country}",
            country_code=country,
        )
    return Verdict("allow", "jurisdiction")


def parties_jurisdiction(parties: list[PartyFacts]) -> Verdict | None:
    for p in parties:
        if p.country is not None and p.country.upper() in RESTRICTED_COUNTRIES:
            who = "customer" if p.role == "source" else "counterparty"
            return refuse(
                "jurisdiction",
                Reason.JURISDICTION_RESTRICTED,
                f"services are unavailable when the {who} is located in {p.country.upper()}",
                party=p.role,
                country_code=p.country.upper(),
            )
    return None


def _external_account(f: TransferFacts) -> Verdict | None:
    ea, rail, currency = f.external_account, f.route[0], f.route[1]
    problem = None
    if f.external_account_id is None:
        problem = "missing"
    elif ea is None:
        problem = "unknown"
    elif f.source_customer_id is not None and ea.customer_id != f.source_customer_id:
        problem = "other_customer"
    elif not ea.approved:
        problem = "not_approved"
    elif ea.rail != rail:
        problem = "rail_mismatch"
    elif ea.currency != currency:
        problem = "currency_mismatch"
    if problem is None:
        return None
    messages = {
        "missing": "a payout needs destination.external_account_id naming an approved external account",
        "unknown": "the external account is not registered for this tenant and mode; ask an operator"
        " to register and approve it",
        "other_customer": "the external account belongs to another customer than the paying wallet's",
        "not_approved": "the external account is not approved yet; ask an operator to approve it",
        "rail_mismatch": f"the external account is approved for {ea.rail if ea else ''}, not {rail}",
        "currency_mismatch": f"the external account is approved for {ea.currency if ea else ''},"
        f" not {currency}",
    }
    return refuse(
        "external_account",
        Reason.EXTERNAL_ACCOUNT_NOT_APPROVED,
        messages[problem],
        problem=problem,
        external_account_id=f.external_account_id,
    )


def _cap(f: TransferFacts) -> Verdict | None:
    cap, amount = f.cap, f.amount
    if cap is None:
        return refuse(
            "transfer_cap",
            Reason.TRANSFER_CAP_EXCEEDED,
            "no transfer cap is approved for this tenant in production; ask an operator to set one",
            limit="none",
        )
    if amount > cap.per_transfer:
        return refuse(
            "transfer_cap",
            Reason.TRANSFER_CAP_EXCEEDED,
            f"amount {amount} {f.currency} exceeds the per-transfer cap of {cap.per_transfer};"
            " split it or ask an operator to raise the cap",
            limit="per_transfer",
            cap=str(cap.per_transfer),
            amount=str(amount),
        )
    if amount > cap.daily:
        return daily_cap_exceeded(f, cap.daily)
    return None


def daily_cap_exceeded(f: TransferFacts, remaining: Decimal) -> Verdict:
    assert f.cap is not None
    return refuse(
        "daily_cap",
        Reason.TRANSFER_CAP_EXCEEDED,
        f"amount {f.amount} {f.currency} exceeds what is left of today's cap"
        f" ({remaining} of {f.cap.daily}); retry tomorrow (UTC) or ask an operator to"
        " raise the cap",
        limit="daily",
        cap=str(f.cap.daily),
        remaining=str(remaining),
        amount=str(f.amount),
    )


def check_transfer(f: TransferFacts) -> Verdict:
    """Every rule but the daily allowance, in order; the first refusal decides."""
    refusal = parties_jurisdiction(f.parties)
    if refusal:
        return refusal
    if f.mode == "production":
        if not f.live_enabled:
            return refuse(
                "tenant_live",
                Reason.TENANT_NOT_LIVE,
                "this tenant is not enabled for production yet; use a sandbox key or"
                " ask an operator to enable live access",
            )
        if not f.route_approved:
            rail, currency = f.route
            return refuse(
                "route",
                Reason.ROUTE_NOT_APPROVED,
                f"the {rail} route in {currency} is not approved for this tenant in"
                " production; ask an operator to approve it",
                rail=rail,
                currency=currency,
            )
    if f.kind == "payout":
        refusal = _external_account(f)
        if refusal:
            return refusal
    refusal = _cap(f)
    if refusal:
        return refusal
    assert f.cap is not None
    if f.cap.review_threshold is not None and f.amount > f.cap.review_threshold:
        return Verdict(
            "review", "review_threshold", details={"review_threshold": str(f.cap.review_threshold)}
        )
    return Verdict("allow", "transfer_policy")

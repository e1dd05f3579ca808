"""Compliance's verdicts compared whole (outcome, rule, reason, message, details, code): the
decision log and the partner's error both show them, so every field is contract. ``make
mutate`` found the earlier tests checked the reason and let the rule name, the
details or the words change unnoticed."""

from __future__ import annotations

import dataclasses
from decimal import Decimal

import pytest

from compliance import rules
from compliance.rules import Cap, ExternalAccount, PartyFacts, Verdict
from tests.unit.test_compliance_rules import CAP, EA, facts, payout

pytestmark = pytest.mark.unit
D = Decimal


def refusal(rule: str, reason: str, message: str, **details: object) -> Verdict:
    return Verdict("refuse", rule, reason, message, details, "forbidden")


def ea_refusal(message: str, problem: str, external_account_id: str | None = "ea_1") -> Verdict:
    """A payout refused for its external account (one reason, the problem in the details)."""
    return refusal(
        "external_account",
        "external_account_not_approved",
        message,
        problem=problem,
        external_account_id=external_account_id,
    )


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (
            facts(parties=[PartyFacts("source", "wal_x", "cus_x", "cn")]),
            refusal(
                "jurisdiction",
                "jurisdiction_restricted",
                "services are unavailable when the customer is located in CN",
                party="source",
                country_code="CN",
            ),
        ),
        (
            facts(parties=[PartyFacts("source", "w", "c", "US"), PartyFacts("destination", "w", "c", "JP")]),
            refusal(
                "jurisdiction",
                "jurisdiction_restricted",
                "services are unavailable when the counterparty is located in JP",
                party="destination",
                country_code="JP",
            ),
        ),
        (
            facts(live_enabled=False),
            refusal(
                "tenant_live",
                "tenant_not_live",
                "this tenant is not enabled for production yet; use a sandbox key or ask an operator"
                " to enable live access",
            ),
        ),
        (
            facts(route_approved=False, route=("stablecoin", "USDT")),
            refusal(
                "route",
                "route_not_approved",
                "the stablecoin route in USDT is not approved for this tenant in production; ask an"
                " operator to approve it",
                rail="stablecoin",
                currency="USDT",
            ),
        ),
        (
            facts(cap=None),
            refusal(
                "transfer_cap",
                "transfer_cap_exceeded",
                "no transfer cap is approved for this tenant in production; ask an operator to set one",
                limit="none",
            ),
        ),
        (
            facts(amount=D("100.01")),
            refusal(
                "transfer_cap",
                "transfer_cap_exceeded",
                "amount 100.01 USDC exceeds the per-transfer cap of 100; split it or ask an operator"
                " to raise the cap",
                limit="per_transfer",
                cap="100",
                amount="100.01",
            ),
        ),
        (
            facts(amount=D(30), cap=Cap(D(100), D(20), None, "tenant")),
            refusal(
                "daily_cap",
                "transfer_cap_exceeded",
                "amount 30 USDC exceeds what is left of today's cap (20 of 20); retry tomorrow (UTC)"
                " or ask an operator to raise the cap",
                limit="daily",
                cap="20",
                remaining="20",
                amount="30",
            ),
        ),
    ],
)
def test_each_refusal_whole(given: rules.TransferFacts, expected: Verdict) -> None:
    assert rules.check_transfer(given) == expected


@pytest.mark.parametrize(
    ("account", "message", "problem"),
    [
        (
            None,
            "the external account is not registered for this tenant and mode; ask an operator to"
            " register and approve it",
            "unknown",
        ),
        (
            dataclasses.replace(EA, customer_id="cus_z"),
            "the external account belongs to another customer than the paying wallet's",
            "other_customer",
        ),
        (
            dataclasses.replace(EA, approved=False),
            "the external account is not approved yet; ask an operator to approve it",
            "not_approved",
        ),
        (
            dataclasses.replace(EA, rail="wire"),
            "the external account is approved for wire, not ach",
            "rail_mismatch",
        ),
        (
            dataclasses.replace(EA, currency="EUR"),
            "the external account is approved for EUR, not USD",
            "currency_mismatch",
        ),
    ],
)
def test_each_external_account_problem_refused_whole(
    account: ExternalAccount | None, message: str, problem: str
) -> None:
    assert rules.check_transfer(payout(external_account=account)) == ea_refusal(message, problem)


def test_a_payout_naming_no_external_account_refused_whole() -> None:
    missing = ea_refusal(
        "a payout needs destination.external_account_id naming an approved external account",
        "missing",
        external_account_id=None,
    )
    assert rules.check_transfer(payout(external_account_id=None, external_account=None)) == missing


def test_allow_and_review_verdicts_whole() -> None:
    assert rules.check_transfer(facts()) == Verdict("allow", "transfer_policy")
    assert rules.check_transfer(facts(amount=D("50.5"))) == Verdict(
        "review", "review_threshold", details={"review_threshold": "50"}
    )
    assert rules.check_transfer(facts(amount=D(100))) == Verdict(
        "review", "review_threshold", details={"review_threshold": "50"}
    )  # exactly the per-transfer cap: allowed by the cap, reviewed by the threshold
    no_review = dataclasses.replace(CAP, review_threshold=None)
    assert rules.check_transfer(facts(amount=D(100), cap=no_review)) == Verdict("allow", "transfer_policy")
    assert rules.check_transfer(facts(amount=D(500), cap=Cap(D(500), D(500), None, "t"))).outcome == "allow"
    # a payout whose source customer is unknown (None) is not another customer's
    assert rules.check_transfer(payout(source_customer_id=None)).outcome == "allow"
    assert Verdict("allow", "default_allow") == rules.ALLOW_DEFAULT
    assert not Verdict("review", "r").refused and Verdict("refuse", "r").refused


def test_customer_jurisdiction_screening_and_amount_verdicts() -> None:
    assert rules.customer_jurisdiction("dz") == refusal(
        "jurisdiction",
        "jurisdiction_restricted",
        "services are unavailable for customers located in DZ",
        country_code="DZ",
    )
    assert rules.customer_jurisdiction("us") == Verdict("allow", "jurisdiction")
    assert rules.address_screened("0xabc") == refusal(
        "address_screening",
        "address_screened",
        "the destination address is screened",
        field="destination.address",
    )
    assert rules.invalid_amount("-1") == Verdict(
        "refuse",
        "amount",
        None,
        "amount '-1' is not a decimal amount above zero",
        {"field": "source.amount"},
        "invalid_request",
    )
    assert rules.parse_amount("0.000001") == D("0.000001")
    assert rules.parse_amount(None) is None  # type: ignore[arg-type]
    assert rules.parties_jurisdiction([PartyFacts("source", "w", None, None)]) is None


def test_the_early_refusals_whole() -> None:
    """A disabled tenant and a reused transfer id are refused before any rule is read; the
    decision log and the partner's error show the rule, reason, words and details."""
    assert rules.tenant_disabled() == refusal("tenant_status", "tenant_disabled", "the tenant is disabled")
    assert rules.transfer_id_reused() == refusal(
        "transfer_id",
        "transfer_id_reused",
        "the transfer id already names another command's transfer",
        field="transfer_id",
    )


def test_a_cap_is_recorded_as_text() -> None:
    assert CAP.as_inputs() == {
        "per_transfer": "100",
        "daily": "500",
        "review_threshold": "50",
        "source": "tenant",
    }
    assert Cap(D("1.5"), D(2), None, "sandbox_default").as_inputs() == {
        "per_transfer": "1.5",
        "daily": "2",
        "review_threshold": None,
        "source": "sandbox_default",
    }
    assert ExternalAccount("e", "c", "ach", "USD", True).approved

"""The pure rules of compliance (no stores): each reason, the order of checks, review."""

from __future__ import annotations

import dataclasses
from datetime import date
from decimal import Decimal

import pytest

from common.faults import is_transient
from compliance import rules
from compliance.allowance import Claim, allot
from compliance.rules import Cap, ExternalAccount, PartyFacts, TransferFacts

pytestmark = pytest.mark.unit

CAP = Cap(Decimal(100), Decimal(500), Decimal(50), "tenant")
EA = ExternalAccount("ea_1", "cus_a", "ach", "USD", True)


def facts(**over: object) -> TransferFacts:
    base = TransferFacts(
        mode="production",
        live_enabled=True,
        kind="transfer",
        amount=Decimal(10),
        currency="USDC",
        route=("provider_wallet", "USDC"),
        route_approved=True,
        parties=[
            PartyFacts("source", "wal_a", "cus_a", "US"),
            PartyFacts("destination", "wal_b", "cus_b", "FR"),
        ],
        source_customer_id="cus_a",
        external_account_id=None,
        external_account=None,
        cap=CAP,
    )
    return dataclasses.replace(base, **over)  # type: ignore[arg-type]


def payout(**over: object) -> TransferFacts:
    fields: dict[str, object] = {
        "kind": "payout",
        "route": ("ach", "USD"),
        "external_account_id": "ea_1",
        "external_account": EA,
    }
    return facts(**{**fields, **over})


def test_allowed_transfer() -> None:
    v = rules.check_transfer(facts())
    assert (v.outcome, v.rule, v.reason) == ("allow", "transfer_policy", None)


@pytest.mark.parametrize("mode", ["sandbox", "production"])
@pytest.mark.parametrize("role", ["source", "destination"])
def test_restricted_party_refused_in_both_modes(mode: str, role: str) -> None:
    parties = [PartyFacts(role, "wal_x", "cus_x", "tn")]
    v = rules.check_transfer(facts(mode=mode, parties=parties))
    assert v.refused and v.reason == "jurisdiction_restricted" and v.details["party"] == role
    assert "TN" in v.message


def test_unknown_party_country_is_not_a_refusal() -> None:
    assert not rules.check_transfer(facts(parties=[PartyFacts("source", "wal_x", None, None)])).refused


def test_production_needs_live_then_route() -> None:
    v = rules.check_transfer(facts(live_enabled=False, route_approved=False))
    assert v.reason == "tenant_not_live"
    v = rules.check_transfer(facts(route_approved=False))
    assert v.reason == "route_not_approved" and v.details == {"rail": "provider_wallet", "currency": "USDC"}


def test_sandbox_ignores_live_and_routes() -> None:
    v = rules.check_transfer(facts(mode="sandbox", live_enabled=False, route_approved=False))
    assert v.outcome == "allow"


def test_jurisdiction_decides_before_everything() -> None:
    v = rules.check_transfer(
        facts(live_enabled=False, cap=None, parties=[PartyFacts("destination", "wal", "cus", "DZ")])
    )
    assert v.reason == "jurisdiction_restricted"


@pytest.mark.parametrize("mode", ["sandbox", "production"])
def test_caps(mode: str) -> None:
    assert (
        rules.check_transfer(facts(mode=mode, amount=Decimal("100.000001"))).details["limit"]
        == "per_transfer"
    )
    small_daily = Cap(Decimal(100), Decimal(20), None, "tenant")
    v = rules.check_transfer(facts(mode=mode, amount=Decimal(30), cap=small_daily))
    assert v.reason == "transfer_cap_exceeded" and v.details["limit"] == "daily"


def test_production_without_cap_refused() -> None:
    v = rules.check_transfer(facts(cap=None))
    assert v.reason == "transfer_cap_exceeded" and v.details["limit"] == "none"


def test_review_above_threshold_only() -> None:
    assert rules.check_transfer(facts(amount=Decimal(50))).outcome == "allow"
    v = rules.check_transfer(facts(amount=Decimal("50.01")))
    assert (v.outcome, v.rule) == ("review", "review_threshold")
    assert rules.check_transfer(facts(amount=Decimal(101))).refused  # the cap still refuses


@pytest.mark.parametrize("mode", ["sandbox", "production"])
@pytest.mark.parametrize(
    ("over", "problem"),
    [
        ({"external_account_id": None, "external_account": None}, "missing"),
        ({"external_account": None}, "unknown"),
        ({"external_account": dataclasses.replace(EA, approved=False)}, "not_approved"),
        ({"external_account": dataclasses.replace(EA, customer_id="cus_z")}, "other_customer"),
        ({"external_account": dataclasses.replace(EA, rail="wire")}, "rail_mismatch"),
        ({"external_account": dataclasses.replace(EA, currency="EUR")}, "currency_mismatch"),
    ],
)
def test_payout_external_account(mode: str, over: dict[str, object], problem: str) -> None:
    v = rules.check_transfer(payout(mode=mode, **over))
    assert v.reason == "external_account_not_approved" and v.details["problem"] == problem
    assert rules.check_transfer(payout(mode=mode)).outcome == "allow"


def test_customer_jurisdiction_and_amounts() -> None:
    for c in sorted(rules.RESTRICTED_COUNTRIES):
        assert rules.customer_jurisdiction(c.lower()).reason == "jurisdiction_restricted"
    assert not rules.customer_jurisdiction("US").refused
    for bad in ("0", "-1", "abc", "NaN", "Infinity", ""):
        assert rules.parse_amount(bad) is None
    assert rules.parse_amount("0.000001") == Decimal("0.000001")
    v = rules.invalid_amount("x")
    assert v.refused and v.code == "invalid_request" and v.details["field"] == "source.amount"


def test_store_errors_are_told_apart_from_bad_commands() -> None:
    from redis.exceptions import ConnectionError as RedisDown
    from sqlalchemy import exc

    class PgError(Exception):
        def __init__(self, sqlstate: str) -> None:
            self.sqlstate = sqlstate

    assert is_transient(ConnectionRefusedError())
    assert is_transient(TimeoutError())
    assert is_transient(RedisDown("gone"))
    assert is_transient(exc.InterfaceError("x", {}, Exception("closed")))
    assert is_transient(exc.DBAPIError("x", {}, PgError("57P01")))  # admin shutdown
    assert is_transient(exc.DBAPIError("x", {}, PgError("40P01")))  # deadlock: retry alone
    wrapped = RuntimeError("batch failed")
    wrapped.__cause__ = ConnectionResetError()
    assert is_transient(wrapped)
    assert not is_transient(exc.IntegrityError("x", {}, PgError("23505")))
    assert not is_transient(ValueError("bad"))


def _claims(*spec: tuple[str, int, int]) -> list[Claim]:
    day = date(2026, 1, 1)
    return [
        Claim(f"c{i}", f"t{i}", tenant, "production", "USDC", day, Decimal(a), Decimal(d))
        for i, (tenant, a, d) in enumerate(spec)
    ]


def test_batch_allowance_grants_in_order_and_a_refusal_takes_nothing() -> None:
    claims = _claims(("a", 30, 60), ("a", 50, 60), ("a", 20, 60), ("a", 10, 60), ("a", 1, 60))
    refused, totals = allot(claims, {})
    assert refused == {"c1": Decimal(30), "c4": Decimal(60)}
    assert totals == {("a", "production", "USDC", date(2026, 1, 1)): Decimal(60)}


def test_batch_allowance_starts_from_the_committed_usage_per_key() -> None:
    day = date(2026, 1, 1)
    claims = _claims(("a", 10, 100), ("b", 10, 100), ("a", 5, 100))
    refused, totals = allot(claims, {("a", "production", "USDC", day): Decimal(88)})
    assert refused == {"c2": Decimal(98)}
    assert totals == {
        ("a", "production", "USDC", day): Decimal(98),
        ("b", "production", "USDC", day): Decimal(10),
    }

"""Pure gateway logic: amount and pair rules, case-insensitive code patterns, party and
destination normalisation, the routed-form router and the OpenAPI document."""

from __future__ import annotations

import re

import msgspec
import pytest

from common.addresses import CHAINS
from common.errors import ServiceError
from common.validation import ci_pattern
from gateway import rules
from gateway.app import ENDPOINTS
from gateway.openapi.document import build_document
from gateway.schemas import STABLECOINS, PartyIn, VADestinationIn
from gateway.transport import Router

pytestmark = pytest.mark.unit


def field_of(fn, *args) -> str:  # type: ignore[no-untyped-def]
    with pytest.raises(ServiceError) as info:
        fn(*args)
    assert info.value.code == "invalid_request"
    return str(info.value.details["field"])


@pytest.mark.parametrize(
    "value,currency",
    [("1", "USDC"), ("0.000001", "USDT"), ("1000000000000", "USD"), ("12.34", "EUR"), ("0.5", "GBP")],
)
def test_amounts_accepted(value: str, currency: str) -> None:
    assert rules.check_amount("amount", value, currency) == value


@pytest.mark.parametrize(
    "value,currency",
    [
        ("0", "USDC"),
        ("-1", "USDC"),
        ("0.0000001", "USDC"),
        ("1.001", "USD"),
        ("1000000000000.01", "USD"),
        ("NaN", "USDC"),
        ("Infinity", "USDC"),
        ("abc", "USDC"),
    ],
)
def test_amounts_refused(value: str, currency: str) -> None:
    assert field_of(rules.check_amount, "x.amount", value, currency) == "x.amount"


def test_ci_pattern_matches_any_case_and_nothing_else() -> None:
    rx = re.compile(ci_pattern(STABLECOINS))
    for s in STABLECOINS:
        assert rx.match(s) and rx.match(s.lower()) and rx.match(s.capitalize())
    assert not rx.match("USD") and not rx.match("USDCX") and not rx.match("")
    assert all(re.match(ci_pattern(CHAINS), c.lower()) for c in CHAINS)


def test_offered_pairs() -> None:
    rules.check_pair("chain", "USDT", "TRON")
    assert field_of(rules.check_pair, "chain", "USDC", "TRON") == "chain"
    assert field_of(rules.check_pair, "chain", "EURC", "ARBITRUM") == "chain"


def party(**kw: object) -> PartyIn:
    return msgspec.convert(kw, PartyIn)


def test_transfer_parties_normalised() -> None:
    src, dst = rules.transfer_parties(
        "transfer",
        party(payment_rail="stablecoin", currency="usdc", chain="sol", amount="2.5", customer_id="cus_1"),
        party(payment_rail="stablecoin", currency="USDC", chain="base", address="0x" + "ab" * 20),
    )
    assert (src.currency, src.chain, dst.chain, src.amount) == ("USDC", "SOL", "BASE", "2.5")
    src, dst = rules.transfer_parties(
        "payout",
        party(payment_rail="provider_wallet", currency="usdt", amount="3", provider_wallet_id="wal_1"),
        party(payment_rail="faster_payments", currency="gbp", external_account_id="ext_1"),
    )
    assert (dst.payment_rail, dst.currency) == ("faster_payments", "GBP")


def test_rail_currency_pairing() -> None:
    src = party(payment_rail="provider_wallet", currency="USDC", amount="1", provider_wallet_id="w")
    for rail, cur in (("ach", "EUR"), ("wire", "GBP"), ("sepa", "USD"), ("faster_payments", "USD")):
        dst = party(payment_rail=rail, currency=cur, external_account_id="e")
        assert field_of(rules.transfer_parties, "payout", src, dst) == "destination.currency"


def test_va_destination_key_sets() -> None:
    d = rules.va_destination(
        msgspec.convert(
            {"rail": "provider_wallet", "currency": "usdc", "address": "0x" + "a" * 40}, VADestinationIn
        ),
        "USD",
    )
    assert (d.rail, d.currency) == ("provider_wallet", "USDC")
    d = rules.va_destination(
        msgspec.convert(
            {"payment_rail": "stablecoin", "currency": "EURC", "provider_wallet_id": "wal_1"}, VADestinationIn
        ),
        "EUR",
    )
    assert (d.rail, d.provider_wallet_id) == ("stablecoin", "wal_1")
    both = msgspec.convert(
        {
            "rail": "stablecoin",
            "payment_rail": "provider_wallet",
            "currency": "USDC",
            "address": "0x" + "a" * 40,
        },
        VADestinationIn,
    )
    assert field_of(rules.va_destination, both, "USD") == "destination.payment_rail"


def test_router_matches_templates_and_reports_405() -> None:
    router = Router(ENDPOINTS)
    found = router.match("GET", "/v1/wallets/wal_123/")
    assert found is not None and found[1] == {"wallet_id": "wal_123"}
    assert router.match("GET", "/v1/nowhere") is None
    with pytest.raises(ServiceError) as info:
        router.match("DELETE", "/v1/customers")
    assert info.value.status == 405


def test_openapi_document_is_consistent() -> None:
    doc = build_document(ENDPOINTS)
    schemas = doc["components"]["schemas"]
    refs = re.findall(r'"#/components/schemas/([A-Za-z0-9_]+)"', msgspec.json.encode(doc).decode())
    assert refs and all(r in schemas for r in refs)
    ops = [(m, p) for p, item in doc["paths"].items() for m in item]
    assert len(ops) == len(ENDPOINTS) + 1  # plus the routed form
    ids = [op["operationId"] for item in doc["paths"].values() for op in item.values()]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize(
    ("rail", "currency", "bank", "refused"),
    [
        ("ach", "USD", {"routing_number": "021000021", "account_number": "12345678"}, None),
        ("sepa", "EUR", {"iban": "DE89370400440532013000"}, None),
        ("faster_payments", "GBP", {"routing_number": "123456"}, None),  # a sort code: no ABA sum
        ("wire", "USD", {"routing_number": "021000022"}, "destination.bank_account.routing_number"),
        ("sepa", "EUR", {"iban": "DE89370400440532013001"}, "destination.bank_account.iban"),
    ],
)
def test_partner_bank_numbers_are_checked_by_checksum(
    rail: str, currency: str, bank: dict[str, str], refused: str | None
) -> None:
    src = party(payment_rail="provider_wallet", currency="USDC", amount="1", provider_wallet_id="w")
    dst = party(payment_rail=rail, currency=currency, external_account_id="e", bank_account=bank)
    if refused is None:
        rules.transfer_parties("payout", src, dst)
    else:
        assert field_of(rules.transfer_parties, "payout", src, dst) == refused


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("https://partner.example/done?x=1", "https://partner.example"),
        ("https://Partner.Example:8443/p", "https://partner.example:8443"),
        ("http://bücher.example/", "http://xn--bcher-kva.example"),
        ("https://evil.example; script-src https:", None),  # a CSP directive in the host
        ("https://a.example'unsafe-inline'/", None),
        ("https://user:pw@partner.example/", None),
        ("javascript:alert(1)", None),
        ("https://partner.example:99999/", None),
        ("https://", None),
        ("", None),
        (None, None),
    ],
)
def test_a_csp_form_target_is_rebuilt_from_a_validated_origin(url: str | None, origin: str | None) -> None:
    from gateway.onboarding.pages import origin_of

    assert origin_of(url) == origin


def test_control_events_name_the_cache_entries_to_evict() -> None:
    import uuid

    from common.auth import key_cache_name, tenant_cache_name
    from common.contracts import encode
    from common.contracts.events import ControlEvent
    from gateway.control import stale_entries

    t1, t2, t3 = (str(uuid.uuid4()) for _ in range(3))
    h1 = "a1" * 32  # a SHA-256 in hex (other shapes are ignored: tests/unit/test_control_reader.py)
    raws = [
        encode(ControlEvent(kind="api_key.revoked", tenant_id=t1, key_hash=h1)),
        encode(ControlEvent(kind="tenant.updated", tenant_id=t1)),
        encode(ControlEvent(kind="tenant.updated", tenant_id=t1)),  # named once
        encode(ControlEvent(kind="branding.changed", tenant_id=t2)),  # nothing cached
        encode(ControlEvent(kind="api_key.revoked", tenant_id=t3)),  # no key hash: nothing
        b"not json",
    ]
    assert stale_entries(raws) == [key_cache_name(h1), tenant_cache_name(t1)]

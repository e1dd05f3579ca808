"""The schemathesis hooks (tests/support/schemathesis_hooks.py) make the rules no JSON Schema can
state hold in a body generated valid, and leave a body generated invalid alone: a hook that
touched negative bodies could turn one valid, and one that missed a rule would make the fuzz
run report the server refusing valid data."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from common import addresses, checksums
from gateway import rules
from tests.support.schemathesis_hooks import fix

pytestmark = pytest.mark.unit


def case(path: str, body: dict[str, Any], negative: bool = False, key: str = "order-1234") -> Any:
    meta = SimpleNamespace(is_negative_at=lambda location: negative)
    return SimpleNamespace(
        operation=SimpleNamespace(path=path), body=body, headers={"Idempotency-Key": key}, meta=meta
    )


def payout() -> dict[str, Any]:
    return {
        "source": {
            "payment_rail": "provider_wallet",
            "currency": "USDC",
            "amount": "5",
            "provider_wallet_id": "w",
        },
        "destination": {
            "payment_rail": "wire",
            "currency": "USD",
            "external_account_id": "x",
            "bank_account": {"iban": "DE00123456781234567890", "routing_number": "021000020"},
        },
        "developer_fee": {"flat_amount": "5"},
        "idempotency_key": "something-else",
    }


def test_a_valid_body_is_made_to_keep_the_rules_across_fields() -> None:
    c = case("/v1/payouts", payout())
    fix(c)
    bank = c.body["destination"]["bank_account"]
    assert checksums.iban_valid(bank["iban"]) and bank["iban"].endswith("123456781234567890")
    assert checksums.aba_valid(bank["routing_number"]) and bank["routing_number"][:8] == "02100002"
    assert c.body["idempotency_key"] == "order-1234"
    assert c.body["developer_fee"] is None  # a fee of 5 on 5 is refused: left out
    rules.check_bank_numbers("destination.bank_account", "wire", bank["routing_number"], bank["iban"])


@pytest.mark.parametrize("chain", sorted(addresses.CHAINS))
def test_an_address_becomes_one_of_its_chain(chain: str) -> None:
    body = {
        "source": {
            "payment_rail": "provider_wallet",
            "currency": "USDC",
            "amount": "5",
            "provider_wallet_id": "w",
        },
        "destination": {
            "payment_rail": "stablecoin",
            "currency": "USDC",
            "chain": chain.lower(),
            "address": "0" * 20,
        },
        "idempotency_key": "order-1234",
    }
    c = case("/v1/transfers", body)
    fix(c)
    assert addresses.problem(chain, c.body["destination"]["address"]) is None


def test_a_fee_below_the_amount_is_kept() -> None:
    body = payout()
    body["developer_fee"] = {"flat_amount": "1", "percentage": "50"}  # 1 + 2.5 < 5
    c = case("/v1/payouts", body)
    fix(c)
    assert c.body["developer_fee"] == {"flat_amount": "1", "percentage": "50"}


def test_a_body_generated_invalid_is_left_as_it_was() -> None:
    c = case("/v1/payouts", payout(), negative=True)
    fix(c)
    assert c.body == payout()


def test_a_webhook_host_becomes_one_that_resolves() -> None:
    c = case("/v1/webhooks", {"endpoint_url": "https://partner.example.com:8443/hooks"})
    fix(c)
    assert c.body["endpoint_url"] == "https://localhost:8443/hooks"


def test_a_new_endpoint_url_of_a_patch_becomes_one_that_resolves() -> None:
    c = case("/v1/webhooks/{webhook_id}", {"endpoint_url": "https://partner.example.com/hooks"})
    fix(c)
    assert c.body["endpoint_url"] == "https://localhost/hooks"


def test_an_events_page_never_names_both_cursors() -> None:
    c = case("/v1/events", {})
    c.body, c.query = None, {"starting_after": "evt_1", "ending_before": "evt_2", "order": "asc"}
    fix(c)
    assert c.query == {"starting_after": "evt_1", "order": "asc"}

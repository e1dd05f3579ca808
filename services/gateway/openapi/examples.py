"""Request examples and the rules JSON Schema cannot state, for the OpenAPI document."""

from __future__ import annotations

from typing import Any

EXAMPLES: dict[tuple[str, str], dict[str, Any]] = {
    ("POST", "/v1/customers"): {
        "account_type": "individual",
        "email": "ada@example.com",
        "country_code": "GB",
        "service_user_id": "user-1842",
        "full_name": "Ada Lovelace",
    },
    ("POST", "/v1/wallets"): {"customer_id": "cus_01hxyz", "symbol": "USDC", "chain": "BASE"},
    ("POST", "/v1/virtual-accounts"): {
        "customer_id": "cus_01hxyz",
        "currency": "USD",
        "destination": {
            "payment_rail": "provider_wallet",
            "currency": "USDC",
            "provider_wallet_id": "wal_01h",
        },
    },
    ("POST", "/v1/transfers"): {
        "source": {
            "payment_rail": "provider_wallet",
            "currency": "USDC",
            "amount": "125.50",
            "provider_wallet_id": "wal_01hsrc",
        },
        "destination": {
            "payment_rail": "provider_wallet",
            "currency": "USDC",
            "provider_wallet_id": "wal_01hdst",
        },
        "idempotency_key": "order-7781-transfer",
    },
    ("POST", "/v1/payouts"): {
        "source": {
            "payment_rail": "provider_wallet",
            "currency": "USDC",
            "amount": "250.00",
            "provider_wallet_id": "wal_01hsrc",
        },
        "destination": {"payment_rail": "ach", "currency": "USD", "external_account_id": "ext_01hbank"},
        "idempotency_key": "payout-2024-06-001",
    },
    ("POST", "/v1/webhooks"): {
        # a host that resolves (the gateway refuses one that does not: NOTES below)
        "endpoint_url": "https://example.com/sluice/events",
        "enabled_events": ["transfer.created", "transfer.updated"],
    },
    ("PATCH", "/v1/webhooks/{webhook_id}"): {"enabled_events": ["transfer.updated"], "status": "enabled"},
    ("POST", "/v1/sandbox/deposits"): {"virtual_account_id": "va_01hxyz", "amount": "100.00"},
    ("POST", "/v1/onboarding-authorizations"): {
        "service_user_id": "user-1842",
        "email": "ada@example.com",
        "account_type": "individual",
        "redirect_url": "https://partner.example.com/onboarded",
        "expires_in_seconds": 900,
    },
}

# Rules that depend on more than the body, stated in the operation's description.
NOTES: dict[tuple[str, str], str] = {
    ("POST", "/v1/transfers"): " The body's idempotency_key must equal the Idempotency-Key header;"
    " an on-chain address must be one of its chain (EIP-55 checksum when mixed case, base58 of 32"
    " bytes on SOL, base58check from T on TRON); the developer fee must be below the amount"
    " (else 400 naming the field).",
    ("POST", "/v1/payouts"): " The body's idempotency_key must equal the Idempotency-Key header; the "
    "external account must be approved for the customer (else 403); an IBAN's check digits and an"
    " ACH or wire routing number's ABA check digit must be right; the developer fee must be below "
    "the amount (else 400 naming the field).",
    ("POST", "/v1/webhooks"): " The endpoint's host must resolve, and outside development only to "
    "public addresses (else 400 with details.reason).",
    ("PATCH", "/v1/webhooks/{webhook_id}"): " A new endpoint_url is vetted as at creation: its host "
    "must resolve, and outside development only to public addresses (else 400 with details.reason).",
}

"""The request rules of :mod:`gateway.rules` stated in JSON Schema, for the OpenAPI document.

The msgspec structs give the shape; these add what the gateway checks across fields (the
offered symbol/chain pairs, rail/currency pairs, amounts per currency, what each rail needs),
built from the same tables :mod:`gateway.rules` uses so they cannot drift apart. A request
valid against the document is one the gateway does not refuse as ``invalid_request``
(schemathesis checks both directions in ``tests/integration/test_gateway_fuzz.py``).
"""

from __future__ import annotations

from typing import Any

from common.money import FIAT_OF_RAIL, TRANSFER_CURRENCIES
from common.offerings import OFFERED_PAIRS as OFFERED_CHAINS
from common.offerings import PEGS as PEGGED
from common.validation import END, ci_pattern
from gateway.rules import ABA_RAILS
from gateway.schemas import FIAT_RAILS, STABLECOINS, WALLET_RAILS

# Decimal strings > 0 and <= 1e12 with at most ``places`` decimals (what check_amount accepts).
_SMALL = {
    6: r"0\.([1-9][0-9]{0,5}|0[1-9][0-9]{0,4}|00[1-9][0-9]{0,3}"
    r"|000[1-9][0-9]{0,2}|0000[1-9][0-9]?|00000[1-9])",
    2: r"0\.([1-9][0-9]?|0[1-9])",
}


def amount_pattern(places: int) -> str:
    whole = rf"[1-9][0-9]{{0,11}}(\.[0-9]{{1,{places}}})?|1000000000000(\.0{{1,{places}}})?"
    return rf"^({whole}|{_SMALL[places]}){END}"


STABLE_AMOUNT = amount_pattern(6)
FIAT_AMOUNT = amount_pattern(2)

_OCTET = r"(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
# https to a DNS name (an international one in its xn-- form), or http to a loopback host;
# no user info, a port of 0-65535, and no space or control character anywhere (the URL becomes a
# Location header). onboarding_links.check_redirect accepts exactly what this matches, so what
# the schema calls valid is never refused, and every URL that matches splits, has its port and
# encodes as IDNA.
_LABEL = r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_PORT = r"(:([0-9]{1,4}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?"
REDIRECT_URL = (
    rf"^([Hh][Tt][Tt][Pp][Ss]://{_LABEL}(\.{_LABEL})*"
    r"|[Hh][Tt][Tt][Pp]://([Ll][Oo][Cc][Aa][Ll][Hh][Oo][Ss][Tt]|127"
    + (r"\." + _OCTET) * 3
    + r"|\[::1\]))"
    + _PORT
    + r"([/?#][^\x00-\x20\x7f-\x9f]*)?$(?!\n)"
)


def _ci(*values: str) -> dict[str, Any]:
    return {"type": "string", "pattern": ci_pattern(values)}


# Conditions are written as alternatives (anyOf of complete cases), not if/then/not: every
# generator (schemathesis, hypothesis-jsonschema) handles alternatives well.
_STR = {"type": "string"}
_NULL = {"type": "null"}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, _NULL]}


def _case(required: list[str], **props: dict[str, Any]) -> dict[str, Any]:
    return {"required": required, "properties": props}


def _and_any(schema: dict[str, Any], *cases: dict[str, Any]) -> dict[str, Any]:
    """``schema`` and at least one of ``cases``."""
    return {"allOf": [schema, {"anyOf": list(cases)}]}


def _parties(
    rails: tuple[str, ...], symbols: frozenset[str] | tuple[str, ...], *, amount: bool, payout: bool = False
) -> dict[str, Any]:
    """gateway.rules._party: what each rail needs, rail/currency pairs, offered chains, and
    amounts by currency; ``amount``: the amount is required (a transfer's or payout's source)."""
    cases: list[dict[str, Any]] = []
    req = ["amount"] if amount else []
    stable_amount = {"amount": _STR} if amount else {}
    for rail in rails:
        if rail in FIAT_RAILS:
            extra = ["external_account_id"] if payout else []
            props = {"payment_rail": {"const": rail}, "currency": _ci(FIAT_OF_RAIL[rail]), "chain": _NULL}
            props["amount"] = (
                {"type": "string", "pattern": FIAT_AMOUNT}
                if amount
                else _nullable({"type": "string", "pattern": FIAT_AMOUNT})
            )
            if payout:
                props["external_account_id"] = _STR
            if rail in ABA_RAILS:  # a 9-digit ABA routing number (its check digit: the description)
                props["bank_account"] = _nullable(
                    _case([], routing_number=_nullable({"type": "string", "pattern": r"^[0-9]{9}$(?!\n)"}))
                )
            cases.append(_case(["payment_rail", "currency", *req, *extra], **props))
            continue
        for symbol in sorted(symbols):
            chains = _ci(*sorted(OFFERED_CHAINS[symbol]))
            base = {"payment_rail": {"const": rail}, "currency": _ci(symbol), **stable_amount}
            if rail == "provider_wallet":
                cases.append(
                    _case(
                        ["payment_rail", "currency", "provider_wallet_id", *req],
                        **base,
                        provider_wallet_id=_STR,
                        chain=_nullable(chains),
                    )
                )
            else:
                cases.append(_case(["payment_rail", "currency", "chain", *req], **base, chain=chains))
    return {"anyOf": cases}


def _transfer() -> dict[str, Any]:
    """Wallet rails, USDC or USDT on both sides and the same on both; the source names its
    amount (and, on-chain, customer_id: ledger.core.parties finds the wallet among the customer's);
    an on-chain destination its address."""
    cases = []
    for c in sorted(TRANSFER_CURRENCIES):
        source = _and_any(
            _parties(WALLET_RAILS, (c,), amount=True),
            _case([], payment_rail={"const": "provider_wallet"}),
            _case(["customer_id"], customer_id=_STR),
        )
        destination = _and_any(
            _parties(WALLET_RAILS, (c,), amount=False),
            _case([], payment_rail={"const": "provider_wallet"}),
            _case(["address"], address=_STR),
        )
        cases.append(_case(["source", "destination"], source=source, destination=destination))
    return {"anyOf": cases}


def _payout() -> dict[str, Any]:
    """From a provider wallet to an approved external account on a bank rail."""
    return _case(
        ["source", "destination"],
        source=_parties(("provider_wallet",), tuple(STABLECOINS), amount=True),
        destination=_parties(FIAT_RAILS, (), amount=False, payout=True),
    )


def _virtual_account() -> dict[str, Any]:
    """gateway.rules.va_destination: a rail (either key, equal when both), an address (or a
    wallet id with payment_rail), and a stablecoin pegged to the account's fiat currency."""
    cases = []
    for fiat, symbols in sorted(PEGGED.items()):
        if not symbols:
            continue  # nothing is pegged to it: every request is refused
        for rail in WALLET_RAILS:
            cur = _ci(*sorted(symbols))
            cases += [
                _case(
                    ["currency", "destination"],
                    currency=_ci(fiat),
                    destination=_case(
                        ["rail", "address"],
                        currency=cur,
                        rail={"const": rail},
                        payment_rail=_nullable({"const": rail}),
                        address=_STR,
                    ),
                ),
                _case(
                    ["currency", "destination"],
                    currency=_ci(fiat),
                    destination=_and_any(
                        _case(["payment_rail"], currency=cur, payment_rail={"const": rail}, rail=_NULL),
                        _case(["address"], address=_STR),
                        _case(["provider_wallet_id"], provider_wallet_id=_STR),
                    ),
                ),
            ]
    return {"anyOf": cases}


def request_rules() -> dict[tuple[str, str], dict[str, Any]]:
    """Extra JSON Schema per (method, path), combined with the struct's schema by allOf."""
    wallets = [_case([], symbol=_ci(s), chain=_ci(*sorted(c))) for s, c in sorted(OFFERED_CHAINS.items())]
    return {
        ("POST", "/v1/wallets"): {"anyOf": wallets},
        ("POST", "/v1/transfers"): _transfer(),
        ("POST", "/v1/payouts"): _payout(),
        ("POST", "/v1/virtual-accounts"): _virtual_account(),
        ("POST", "/v1/sandbox/deposits"): _case([], amount={"type": "string", "pattern": FIAT_AMOUNT}),
        ("POST", "/v1/onboarding-authorizations"): _case(
            [], redirect_url=_nullable({"type": "string", "pattern": REDIRECT_URL})
        ),
        # webhooks.service.changes_of: at least one field that is not null
        ("PATCH", "/v1/webhooks/{webhook_id}"): {
            "anyOf": [_case([f], **{f: {"not": _NULL}}) for f in ("endpoint_url", "enabled_events", "status")]
        },
    }

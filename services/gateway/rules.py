"""Cross-field request rules (docs/reference/index.md, "Conventions every resource follows"),
applied after the shape is valid.

Every refusal is ``invalid_request`` naming the dotted field it is about.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

import msgspec

from common import addresses
from common.checksums import aba_valid, iban_valid
from common.contracts.commands import Party, VADestination
from common.errors import invalid
from common.money import FIAT_OF_RAIL, MAX_AMOUNT, TRANSFER_CURRENCIES, places
from common.offerings import OFFERED_PAIRS, PEGS
from gateway.schemas import (
    FIAT_RAILS,
    STABLECOINS,
    WALLET_RAILS,
    PartyIn,
    VADestinationIn,
)

ABA_RAILS = ("ach", "wire")  # rails whose routing number is an ABA one, check digit and all


def decimals_for(currency: str) -> int:
    return places(currency)


def check_amount(field: str, value: str, currency: str) -> str:
    """A decimal string > 0, <= 1e12, with the currency's precision; returned unchanged."""
    try:
        amount = Decimal(value)
    except InvalidOperation:
        raise invalid(field, f'{field} must be a decimal string, like "10.50"') from None
    if not amount.is_finite() or amount <= 0:
        raise invalid(field, f"{field} must be greater than 0")
    if amount > MAX_AMOUNT:
        raise invalid(field, f"{field} must be at most 1000000000000")
    places = decimals_for(currency)
    exponent = amount.as_tuple().exponent
    if isinstance(exponent, int) and -exponent > places:
        raise invalid(
            field,
            f"{field} must be a decimal string with at most {places} decimal places for {currency.upper()},"
            f' like "{_example(places)}"',
        )
    return value


def _example(places: int) -> str:
    return "10." + "50"[:places].ljust(places, "0") if places else "10"


def check_pair(field: str, symbol: str, chain: str) -> None:
    if chain not in OFFERED_PAIRS.get(symbol, frozenset()):
        raise invalid(
            field, f"{field} must be a chain that offers {symbol}; {symbol} is not offered on {chain}"
        )


def va_destination(d: VADestinationIn, fiat: str) -> VADestination:
    """Both key sets: ``{rail, currency, address}`` and ``{payment_rail, currency,
    provider_wallet_id | address}``; the wallet's symbol must be pegged to the fiat currency."""
    if d.rail is not None and d.payment_rail is not None and d.rail != d.payment_rail:
        raise invalid(
            "destination.payment_rail",
            "destination.payment_rail must equal destination.rail when both are given",
        )
    rail = d.rail or d.payment_rail
    if rail is None:
        raise invalid("destination.rail", "destination.rail (or destination.payment_rail) is required")
    if d.rail is not None and d.address is None:
        raise invalid("destination.address", "destination.address is required when destination.rail is given")
    if d.address is None and d.provider_wallet_id is None:
        raise invalid(
            "destination.provider_wallet_id",
            "destination.provider_wallet_id (or destination.address) is required",
        )
    symbol = d.currency.upper()
    if symbol not in PEGS[fiat]:
        raise invalid(
            "destination.currency",
            f"destination.currency must be pegged to {fiat}, not {symbol}; pegged: "
            + (", ".join(sorted(PEGS[fiat])) or "none"),
        )
    return VADestination(
        rail=rail, currency=symbol, address=d.address, provider_wallet_id=d.provider_wallet_id
    )


def check_bank_numbers(field: str, rail: str, routing_number: str | None, iban: str | None) -> None:
    """A partner's bank numbers pass their checksums, not only their shape: an ABA routing
    number on the US rails (ach, wire), an IBAN's mod-97 check digits on any rail."""
    if routing_number is not None and rail in ABA_RAILS and not aba_valid(routing_number):
        raise invalid(
            f"{field}.routing_number",
            f"{field}.routing_number must be a 9-digit ABA routing number with a valid checksum on {rail}",
        )
    if iban is not None and not iban_valid(iban):
        raise invalid(f"{field}.iban", f"{field}.iban must have valid check digits (ISO 13616 mod 97)")


def _party(side: str, p: PartyIn) -> Party:
    currency = p.currency.upper()
    chain = p.chain.upper() if p.chain else None
    rail = p.payment_rail
    if rail in FIAT_RAILS:
        if currency != FIAT_OF_RAIL[rail]:
            raise invalid(
                f"{side}.currency", f"{side}.currency must be {FIAT_OF_RAIL[rail]} on {rail}, not {currency}"
            )
        if chain is not None:
            raise invalid(f"{side}.chain", f"{side}.chain must be left out on {rail}: it has no chain")
    else:
        if currency not in STABLECOINS:
            raise invalid(
                f"{side}.currency", f"{side}.currency must be a stablecoin on {rail}, not {currency}"
            )
        if rail == "provider_wallet" and p.provider_wallet_id is None:
            raise invalid(
                f"{side}.provider_wallet_id", f"{side}.provider_wallet_id is required on provider_wallet"
            )
        if rail == "stablecoin" and chain is None:
            raise invalid(f"{side}.chain", f"{side}.chain is required on stablecoin")
        if chain is not None:
            check_pair(f"{side}.chain", currency, chain)
    if p.amount is not None:
        check_amount(f"{side}.amount", p.amount, currency)
    if p.bank_account is not None:
        b = p.bank_account
        check_bank_numbers(f"{side}.bank_account", rail, b.routing_number, b.iban)
    # PartyIn (and its BankAccountIn) has Party's fields: copied as they are, but the codes
    # normalised above.
    party = msgspec.convert(p, Party, from_attributes=True)
    return msgspec.structs.replace(party, currency=currency, chain=chain)


def transfer_parties(kind: str, src: PartyIn, dst: PartyIn) -> tuple[Party, Party]:
    """Normalised (source, destination) of a transfer or payout."""
    if src.amount is None:
        raise invalid("source.amount", "source.amount is required")
    if kind == "transfer":
        for side, p in (("source", src), ("destination", dst)):
            if p.payment_rail not in WALLET_RAILS:
                raise invalid(
                    f"{side}.payment_rail",
                    f"{side}.payment_rail must be provider_wallet or stablecoin for a transfer",
                )
            if p.currency.upper() not in TRANSFER_CURRENCIES:
                raise invalid(f"{side}.currency", f"{side}.currency must be USDC or USDT for a transfer")
    else:
        if src.payment_rail != "provider_wallet":
            raise invalid("source.payment_rail", "source.payment_rail must be provider_wallet for a payout")
        if dst.payment_rail not in FIAT_RAILS:
            raise invalid(
                "destination.payment_rail",
                "destination.payment_rail must be one of " + ", ".join(FIAT_RAILS) + " for a payout",
            )
        if dst.external_account_id is None:
            raise invalid(
                "destination.external_account_id",
                "destination.external_account_id is required: payouts pay an approved external account",
            )
    source = _party("source", src)
    destination = _party("destination", dst)
    if kind == "transfer":
        if destination.currency != source.currency:
            raise invalid("destination.currency", "destination.currency must match source.currency")
        if src.payment_rail == "stablecoin" and src.customer_id is None:  # a wallet id only narrows
            raise invalid("source.customer_id", "source.customer_id is required for an on-chain source")
        if dst.payment_rail == "stablecoin" and dst.address is None:
            raise invalid(
                "destination.address", "destination.address is required for an on-chain destination"
            )
        if dst.payment_rail == "stablecoin" and dst.address is not None:
            _check_address(dst)
    return source, destination


def _check_address(dst: PartyIn) -> None:
    """An on-chain destination (perhaps outside the suite: a withdrawal) must be an address of
    its chain (``_party`` made the chain required; the ledger checks it again against the
    source wallet's chain)."""
    assert dst.address is not None and dst.chain is not None
    if (why := addresses.problem(dst.chain, dst.address)) is not None:
        raise invalid("destination.address", f"destination.address must be an address of {dst.chain}: {why}")

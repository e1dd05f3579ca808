"""Schemathesis hooks (``SCHEMATHESIS_HOOKS=tests.support.schemathesis_hooks``) for the gateway
and admin rules that no JSON Schema can state, each written in the document beside the field or
in the operation's description:

- transfers and payouts: the body's ``idempotency_key`` equals the ``Idempotency-Key`` header;
  an on-chain address is one of its chain (EIP-55, base58, base58check); an IBAN's check digits
  and an ACH or wire routing number's ABA check digit are right; the developer fee is below the
  amount;
- webhooks: the endpoint's host must resolve (DNS), and this machine resolves only localhost;
- admin's screened-address actions: the address must be one on its chain, checksum included
  (EIP-55, base58check), which no pattern can state; and admin's ``redrive_dead_letters`` with
  ``all: true``, valid but not harmless beside other tests, names one dead letter instead.

The rewrite runs before every call (``before_call``), so the examples phase, which applies no
``map_case``, is covered as well as the coverage and fuzzing phases; schemathesis re-reads
whether an edited case is still positive. A case is only touched where the body was generated
valid and the values involved are already of the documented shape, so a negative body stays
negative and a positive one stays positive.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import schemathesis
from schemathesis.core.parameters import ParameterLocation

from common import checksums
from common.addresses import CHAINS, EVM_CHAINS, b58check_encode, b58encode
from gateway.schemas import IDEMPOTENCY_KEY_PATTERN

_KEY = re.compile(IDEMPOTENCY_KEY_PATTERN)
_IBAN = re.compile(r"^[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}$")
_ABA = re.compile(r"^[0-9]{9}$")
_URI = re.compile(r"^[Hh][Tt][Tt][Pp][Ss]?://[^\s/?#@]+(/[^\s]*)?$")
# A host that resolves in any test environment; the stack allows private webhook targets.
RESOLVABLE = "localhost"
SCREENING = {"add_screened_address", "remove_screened_address"}


def address_on(chain: str) -> str:
    """A valid address on ``chain`` (the same one each time)."""
    if chain in EVM_CHAINS:
        return "0x" + "ab" * 20
    if chain == "SOL":
        return b58encode(bytes(range(1, 33)))
    return b58check_encode(b"\x41" + bytes(range(20)))  # TRON


@schemathesis.hook
def before_call(context: Any, case: Any, kwargs: dict[str, Any]) -> None:
    fix(case)


def fix(case: Any) -> None:
    """The rules across fields or beyond a pattern, made to hold in a body generated valid."""
    path, body, headers = case.operation.path, case.body, case.headers or {}
    query = getattr(case, "query", None)
    query = query if isinstance(query, dict) else {}
    if path == "/v1/events" and "starting_after" in query and "ending_before" in query:
        # A page starts after one event or ends before one, never both (the document says so in
        # words; a schema cannot): the server refuses the pair, 400 conflicting_cursors.
        query.pop("ending_before")
    if not isinstance(body, dict) or _negative_body(case):
        return
    if path in ("/v1/transfers", "/v1/payouts"):
        header = next((v for k, v in headers.items() if k.lower() == "idempotency-key"), None)
        sent = body.get("idempotency_key")
        # The server sees the header without surrounding whitespace (HTTP strips it).
        header = header.strip(" \t") if isinstance(header, str) else None
        if header and isinstance(sent, str) and _KEY.match(header) and _KEY.match(sent):
            body["idempotency_key"] = header
        for side in ("source", "destination"):
            if isinstance(body.get(side), dict):
                _fix_party(body[side])
        _fix_fee(body)
    elif path in ("/v1/webhooks", "/v1/webhooks/{webhook_id}"):  # create, and PATCH's new URL
        url = body.get("endpoint_url")
        if isinstance(url, str) and _URI.match(url) and len(url) <= 2048:
            parts = urlsplit(url)
            port = f":{parts.port}" if _has_port(parts.netloc) else ""
            body["endpoint_url"] = urlunsplit(parts._replace(netloc=RESOLVABLE + port))
    elif path == "/" and body.get("action") == "redrive_dead_letters" and body.get("all") is True:
        # Valid, but it would redrive the whole stack's dead letters under other tests' feet.
        # (A negative body is left as generated: rewritten, it could become valid: a case that
        # broke ``all``'s branch of the anyOf was sent as ids only, accepted, and failed ST201.)
        body.pop("all")
        body["dead_letter_ids"] = ["dl_fuzz_not_there"]
    elif path == "/" and isinstance(body.get("action"), str) and body["action"] in SCREENING:
        chain, address = body.get("chain"), body.get("address")
        valid_chain = isinstance(chain, str) and chain.upper() in CHAINS
        if valid_chain and isinstance(address, str) and 1 <= len(address) <= 128:
            body["address"] = address_on(str(chain).upper())


def _fix_party(party: dict[str, Any]) -> None:
    """An address of the party's chain, and bank numbers whose check digits are right."""
    chain, address = party.get("chain"), party.get("address")
    if isinstance(chain, str) and chain.upper() in CHAINS and isinstance(address, str) and address:
        party["address"] = address_on(chain.upper())
    bank = party.get("bank_account")
    if not isinstance(bank, dict):
        return
    iban = bank.get("iban")
    if isinstance(iban, str) and _IBAN.match(iban):
        bank["iban"] = checksums.iban(iban[:2], iban[4:])
    routing = bank.get("routing_number")
    if isinstance(routing, str) and _ABA.match(routing):
        bank["routing_number"] = routing[:8] + checksums.aba_check_digit(routing[:8])


def _fix_fee(body: dict[str, Any]) -> None:
    """The developer fee must be below the amount (400 on developer_fee otherwise): a fee
    generated at or above it is left out."""
    fee, source = body.get("developer_fee"), body.get("source")
    if not isinstance(fee, dict) or not isinstance(source, dict):
        return
    try:
        amount = Decimal(str(source.get("amount")))
        flat = Decimal(str(fee.get("flat_amount") or 0))
        pct = Decimal(str(fee.get("percentage") or 0))
    except ArithmeticError:
        return
    if flat + amount * pct / 100 >= amount:
        body["developer_fee"] = None


def _negative_body(case: Any) -> bool:
    """Whether schemathesis generated the body to violate the schema."""
    meta = case.meta
    return meta is not None and meta.is_negative_at(ParameterLocation.BODY)


def _has_port(netloc: str) -> bool:
    try:
        return urlsplit("//" + netloc).port is not None
    except ValueError:
        return False

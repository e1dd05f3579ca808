"""Schemathesis hooks (``SCHEMATHESIS_HOOKS=tests.support.schemathesis_hooks``) for the two gateway rules
that depend on more than the request body, both written in the operation's description:

- transfers and payouts: the body's ``idempotency_key`` equals the ``Idempotency-Key`` header;
- webhooks: the endpoint's host must resolve (DNS), which no schema can promise;
- admin's screened-address actions: the address must be one on its chain, checksum included
  (EIP-55, base58check), which no pattern can state; and admin's ``redrive_dead_letters`` with
  ``all: true``, valid but not harmless beside other tests, names one dead letter instead.

A case is only touched where the values involved are already valid, so a negative case stays
negative and a positive one stays positive.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import schemathesis
from schemathesis.core.parameters import ParameterLocation

from common.addresses import CHAINS, EVM_CHAINS, b58check_encode, b58encode

_KEY = re.compile(r"^[\x20-\x7e]{8,256}$")
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
def map_case(context: Any, case: Any) -> Any:
    path, body, headers = case.operation.path, case.body, case.headers or {}
    if not isinstance(body, dict):
        return case
    if path in ("/v1/transfers", "/v1/payouts"):
        header = next((v for k, v in headers.items() if k.lower() == "idempotency-key"), None)
        sent = body.get("idempotency_key")
        # The server sees the header without surrounding whitespace (HTTP strips it).
        header = header.strip(" \t") if isinstance(header, str) else None
        if header and isinstance(sent, str) and _KEY.match(header) and _KEY.match(sent):
            body["idempotency_key"] = header
    elif path == "/v1/webhooks":
        url = body.get("endpoint_url")
        if isinstance(url, str) and _URI.match(url) and len(url) <= 2048:
            parts = urlsplit(url)
            port = f":{parts.port}" if _has_port(parts.netloc) else ""
            body["endpoint_url"] = urlunsplit(parts._replace(netloc=RESOLVABLE + port))
    elif (
        path == "/"
        and body.get("action") == "redrive_dead_letters"
        and body.get("all") is True
        and not _negative_body(case)
    ):
        # Valid, but it would redrive the whole stack's dead letters under other tests' feet.
        # A negative body is left as generated: rewritten, it could become valid (a case that
        # broke ``all``'s branch of the anyOf was sent as ids only, accepted, and failed ST201).
        body.pop("all")
        body["dead_letter_ids"] = ["dl_fuzz_not_there"]
    elif path == "/" and isinstance(body.get("action"), str) and body["action"] in SCREENING:
        chain, address = body.get("chain"), body.get("address")
        valid_chain = isinstance(chain, str) and chain.upper() in CHAINS
        if valid_chain and isinstance(address, str) and 1 <= len(address) <= 128:
            body["address"] = address_on(str(chain).upper())
    return case


def _negative_body(case: Any) -> bool:
    """Whether schemathesis generated the body to violate the schema."""
    meta = case.meta
    return meta is not None and meta.is_negative_at(ParameterLocation.BODY)


def _has_port(netloc: str) -> bool:
    try:
        return urlsplit("//" + netloc).port is not None
    except ValueError:
        return False

"""The words for each pattern the request schemas check, so a refusal says the rule in a sentence
("amount must be a decimal string ...") and the pattern itself travels only as
``details.pattern`` (common.wording; docs/guides/errors.md, "Validation messages").

Keyed by the schemas' own types, so a pattern changed there keeps its words; a pattern with no
words here falls back to its description, and the unit test that walks every field of the
document fails on a message that would show neither.
"""

from __future__ import annotations

from typing import Any

import msgspec.inspect as mi

from common.addresses import CHAINS
from common.contracts.events import DELIVERED_EVENT_TYPES
from common.money import FIATS, STABLECOINS
from gateway import schemas as s


def _pattern(t: Any, field: str | None = None) -> str:
    """The pattern of an annotated string type, or of a struct's field of one."""
    info = mi.type_info(t)
    if field is not None:
        assert isinstance(info, mi.StructType)
        info = next(f.type for f in info.fields if f.name == field)
    stack = [info]
    while stack:
        node = stack.pop()
        if isinstance(node, mi.Metadata):
            stack.append(node.type)
        elif isinstance(node, mi.UnionType):
            stack.extend(node.types)
        elif isinstance(node, mi.StrType) and node.pattern is not None:
            return node.pattern
    raise LookupError(f"no pattern in {t!r} {field or ''}")


def _any_case(what: str, values: tuple[str, ...]) -> str:
    return f"{what}: {', '.join(values)} (in any letter case)"


PHRASES: dict[str, str] = {
    _pattern(s.Symbol): _any_case("a stablecoin symbol", STABLECOINS),
    _pattern(s.Chain): _any_case("a chain", CHAINS),
    _pattern(s.Fiat): _any_case("a fiat currency code", FIATS),
    _pattern(s.AnyCurrency): _any_case("a currency code", STABLECOINS + FIATS),
    s.EMAIL_PATTERN: 'an email address of at most 254 characters, like "ada@example.com"',
    _pattern(s.Country): 'a two-letter ISO 3166-1 country code in capitals, like "US"',
    _pattern(s.E164): 'a phone number in E.164 form ("+" and up to 15 digits), like "+14155550100"',
    _pattern(s.Text): "a string of 1 to 200 characters (no NUL character)",
    _pattern(s.Id): 'an id of 1 to 128 letters, digits, "_" or "-"',
    _pattern(s.Address): "an address of 16 to 128 letters and digits",
    _pattern(s.Amount): (
        "a decimal string greater than 0 and at most 1000000000000, with at most 6 decimal places"
        ' (2 for fiat currencies), like "10.50"'
    ),
    _pattern(
        s.Uri
    ): 'an http:// or https:// URL of at most 2048 characters, like "https://example.com/hooks"',
    s.IDEMPOTENCY_KEY_PATTERN: (
        "8 to 256 printable ASCII characters, not starting or ending with a space, equal to the"
        " Idempotency-Key header"
    ),
    s.PERCENT_PATTERN: 'a decimal string from "0" to "100" with at most 4 decimal places, like "1.5"',
    _pattern(s.EventType): "an event type: " + ", ".join(DELIVERED_EVENT_TYPES),
    _pattern(s.BankAccountIn, "account_number"): "an account number of 4 to 17 digits",
    _pattern(s.BankAccountIn, "routing_number"): "a routing number or sort code of 6 to 9 digits",
    _pattern(s.BankAccountIn, "iban"): (
        'an IBAN in capitals without spaces, 15 to 34 characters, like "DE89370400440532013000"'
    ),
    _pattern(s.BankAccountIn, "bic"): 'a BIC of 8 or 11 capital letters and digits, like "COBADEFFXXX"',
    _pattern(s.StatementQuery, "starting_after"): "the next_cursor of the previous page (digits only)",
}

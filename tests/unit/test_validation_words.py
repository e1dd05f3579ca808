"""Every request-validation refusal the gateway sends is a sentence that names its field and
states its rule; a pattern appears only as ``details.pattern`` (docs/guides/errors.md,
"Validation messages").

The walk takes every request body and query type of the endpoint table (the same types the
OpenAPI document is built from), every field at every depth, and sends each field values that
break each kind of rule (type, pattern, length, bounds, enum, an unknown field, a missing one)
through the gateway's own decoding (``body_of`` / ``query_of``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any, cast

import msgspec.inspect as mi
import pytest

from common.errors import ServiceError
from common.wording import type_at
from gateway.app import ENDPOINTS
from gateway.pipeline import Call
from gateway.routes.base import body_of, query_of

pytestmark = pytest.mark.unit

# Values that break some rule of almost every field: wrong JSON types, empty and huge strings,
# strings no pattern here accepts, out-of-range numbers, empty and nested containers.
BAD_VALUES: list[Any] = [
    "",
    "not a valid value ~",
    "\x00",
    "x" * 3000,
    -1,
    0,
    10**9,
    True,
    [],
    [""],
    ["not a valid value ~"],
    ["x"] * 50,
    {},
    {"unexpected": 1},
]


def _types() -> list[tuple[str, type, bool]]:
    """(label, type, is_query) of every request body and query the endpoint table declares."""
    seen: dict[tuple[type, bool], str] = {}
    for ep in ENDPOINTS:
        if ep.request is not None:
            seen.setdefault((ep.request, False), f"{ep.method} {ep.path} body")
        if ep.query is not None:
            seen.setdefault((ep.query, True), f"{ep.method} {ep.path} query")
    return [(label, t, query) for (t, query), label in seen.items()]


def _fields(t: mi.Type, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every field path under ``t`` (struct fields, and list items as index 0)."""
    options = t.types if isinstance(t, mi.UnionType) else (t,)
    for option in options:
        while isinstance(option, mi.Metadata):
            option = option.type
        if isinstance(option, mi.StructType):
            for f in option.fields:
                yield (*path, f.encode_name)
                yield from _fields(f.type, (*path, f.encode_name))
        elif isinstance(option, mi.ListType):
            yield (*path, "0")
            yield from _fields(option.item_type, (*path, "0"))


def _patterns(t: mi.Type, found: set[str]) -> set[str]:
    if isinstance(t, mi.StrType) and t.pattern:
        found.add(t.pattern)
    for child in ("type", "item_type"):
        if hasattr(t, child):
            _patterns(getattr(t, child), found)
    for option in getattr(t, "types", ()):
        _patterns(option, found)
    for f in getattr(t, "fields", ()):
        _patterns(f.type, found)
    return found


def _nest(path: tuple[str, ...], value: Any) -> Any:
    for part in reversed(path):
        value = [value] if part.isdigit() else {part: value}
    return value


def _refusal(t: type, query: bool, body: Any) -> ServiceError | None:
    call = cast(Call, SimpleNamespace(body=body, query=body))
    try:
        (query_of if query else body_of)(call, t)
    except ServiceError as err:
        return err
    return None


def _problems(err: ServiceError, patterns: set[str]) -> list[str]:
    message, field = err.message, str(err.details.get("field", ""))
    found = []
    named = "the request body" if field in ("", "body") else field
    if not message.startswith(named):
        found.append(f"does not start with its field {named!r}")
    if not re.search(r" (must|is required|is not a field)\b", message):
        found.append("states no rule")
    if "Expected `" in message or "regex" in message or re.search(r"\$[)'`]|\^\(|\[\^", message):
        found.append("reads as msgspec's or a pattern")
    found += [f"shows the pattern {p}" for p in patterns if p in message]
    if "pattern" in err.details and err.details["pattern"] not in patterns:
        found.append("details.pattern is not one of the type's patterns")
    return found


@pytest.mark.parametrize(("label", "t", "query"), _types(), ids=[label for label, _, _ in _types()])
def test_every_field_is_refused_in_words(label: str, t: type, query: bool) -> None:
    info = mi.type_info(t)
    patterns = _patterns(info, set())
    checked, failures = 0, []
    bodies: list[Any] = [{}, {"not_a_field": 1}, [1], "text"] if not query else [{"not_a_field": "1"}]
    for path in _fields(info):
        bodies += [_nest(path, value) for value in BAD_VALUES]
        if not path[-1].isdigit():
            bodies.append(_nest(path[:-1], {path[-1]: "x", "not_a_field": 1}))
    for body in bodies:
        err = _refusal(t, query, body)
        if err is None or err.code != "invalid_request":
            continue
        checked += 1
        failures += [f"{body!r:.80}: {err.message!r} {p}" for p in _problems(err, patterns)]
    assert checked >= len(bodies) // 3, f"{label}: too few refusals to judge ({checked})"
    assert not failures, "\n".join(failures[:20])


def test_a_pattern_is_a_detail_and_the_rule_a_sentence() -> None:
    from gateway.schemas import CustomerCreate, TransferCreate

    call = cast(Call, SimpleNamespace(body={"account_type": "individual", "country_code": "us"}))
    with pytest.raises(ServiceError) as info:
        body_of(call, CustomerCreate)
    assert (
        info.value.message
        == 'country_code must be a two-letter ISO 3166-1 country code in capitals, like "US"'
    )
    assert info.value.details == {"field": "country_code", "pattern": r"^[A-Z]{2}$(?!\n)"}
    call = cast(Call, SimpleNamespace(body={"source": {"amount": "10.5.0"}}))
    with pytest.raises(ServiceError) as info:
        body_of(call, TransferCreate)
    assert info.value.details["field"] == "source.amount"
    assert info.value.message.startswith("source.amount must be a decimal string greater than 0")
    assert 'like "10.50"' in info.value.message


def test_every_pattern_of_the_document_has_words() -> None:
    """A pattern without words or a description would be refused as "of the form given in
    details.pattern": true, but not the rule in words. Add its words to gateway.wording."""
    from common.wording import rule_of
    from gateway.wording import PHRASES

    missing = set()
    for _, t, _ in _types():
        info = mi.type_info(t)
        for path in _fields(info):
            field = type_at(info, list(path))
            assert field is not None, path
            if "details.pattern" in rule_of(field, PHRASES):
                missing.add(".".join(path))
    assert not missing, sorted(missing)

"""A request-validation refusal in words: a sentence that names the field and states its rule.

msgspec says what failed in its own terms ("Expected `str` matching regex '^[A-Z]{2}$' - at
`$.country_code`"); a partner reads "country_code must be a two-letter country code in capitals,
like \"US\"." The rule is read from the type itself (msgspec.inspect), so the sentence describes
the field the server actually checked; a pattern travels only as ``details.pattern``, for the
partner's program, never as the message (docs/guides/errors.md, "Validation messages").

``phrases`` maps a string pattern to the words for it (the gateway keeps its own table beside
its schemas); a pattern without words falls back to the field's description, then to a sentence
that points at ``details.pattern``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import msgspec
import msgspec.inspect as mi

_PATH = re.compile(r" - at `\$(?P<path>[^`]*)`$")
_NAMED = re.compile(r"(?P<what>missing required|unknown) field `(?P<name>[^`]+)`")
_JSON_NAMES = {
    "str": "a string",
    "int": "an integer",
    "float": "a number",
    "bool": "a boolean",
    "array": "a list",
    "object": "an object",
    "null": "null",
}


def _path_of(message: str) -> tuple[list[str], str]:
    """The dotted path's parts msgspec's message names, and the message without the path."""
    m = _PATH.search(message)
    if not m:
        return [], message
    parts = [p for p in re.split(r"\.|\[(\d+)\]", m.group("path")) if p]
    return parts, message[: m.start()]


def _unwrap(t: mi.Type) -> tuple[mi.Type, str | None]:
    """The constrained type under ``Metadata``, and its description when it has one."""
    description = None
    while isinstance(t, mi.Metadata):
        schema = t.extra_json_schema or {}
        description = description or schema.get("description")
        t = t.type
    return t, description


def _options(t: mi.Type) -> list[mi.Type]:
    """The non-null alternatives of a type (a union's members, or the type itself)."""
    if isinstance(t, mi.UnionType):
        return [o for o in t.types if not isinstance(o, mi.NoneType)]
    return [t]


def type_at(root: mi.Type, parts: list[str]) -> mi.Type | None:
    """The type of the field at ``parts`` (struct fields by name, list items by index)."""
    t: mi.Type | None = root
    for part in parts:
        if t is None:
            return None
        found: mi.Type | None = None
        for option in _options(_unwrap(t)[0]):
            option = _unwrap(option)[0]
            if isinstance(option, mi.StructType):
                found = next((f.type for f in option.fields if f.encode_name == part), None)
            elif isinstance(option, mi.ListType) and part.isdigit():
                found = option.item_type
            if found is not None:
                break
        t = found
    return t


def _between(low: object, high: object, unit: str) -> str:
    if low is not None and high is not None:
        return f"{low} to {high} {unit}"
    if low is not None:
        return f"at least {low} {unit}"
    return f"at most {high} {unit}"


def _bounds(t: mi.IntType | mi.FloatType) -> str:
    low = f"at least {t.ge}" if t.ge is not None else f"greater than {t.gt}" if t.gt is not None else None
    high = f"at most {t.le}" if t.le is not None else f"less than {t.lt}" if t.lt is not None else None
    if t.ge is not None and t.le is not None:
        return f" from {t.ge} to {t.le}"
    said = " and ".join(w for w in (low, high) if w)
    return f" {said}" if said else ""


def _quoted(values: tuple[Any, ...] | list[Any]) -> str:
    return ", ".join(f'"{v}"' for v in values)


def rule_of(t: mi.Type, phrases: Mapping[str, str]) -> str:
    """What a value of ``t`` must be, in words ("a string of 1 to 200 characters")."""
    t, description = _unwrap(t)
    if isinstance(t, mi.UnionType):
        words = [rule_of(o, phrases) for o in _options(t)]
        return ", or ".join(dict.fromkeys(words))
    if isinstance(t, mi.StrType):
        if t.pattern is not None:
            said = phrases.get(t.pattern) or description
            if said is None:
                return "a string of the form given in details.pattern"
            return said
        if t.min_length is not None or t.max_length is not None:
            return "a string of " + _between(t.min_length, t.max_length, "characters")
        return description or "a string"
    if isinstance(t, mi.IntType | mi.FloatType):
        what = "an integer" if isinstance(t, mi.IntType) else "a number"
        return what + _bounds(t)
    if isinstance(t, mi.LiteralType):
        return "one of " + _quoted(t.values)
    if isinstance(t, mi.EnumType):
        return "one of " + _quoted([m.value for m in t.cls])
    if isinstance(t, mi.ListType):
        item = rule_of(t.item_type, phrases)
        size = (
            "a list"
            if t.min_length is None and t.max_length is None
            else ("a list of " + _between(t.min_length, t.max_length, "items"))
        )
        return f"{size}, each {item}"
    if isinstance(t, mi.StructType | mi.DictType):
        return "an object"
    if isinstance(t, mi.BoolType):
        return "true or false"
    return description or "a value of the documented type"


def _pattern_of(t: mi.Type | None) -> str | None:
    if t is None:
        return None
    for option in _options(_unwrap(t)[0]):
        inner = _unwrap(option)[0]
        if isinstance(inner, mi.StrType) and inner.pattern is not None:
            return inner.pattern
        if isinstance(inner, mi.ListType):
            return _pattern_of(inner.item_type)
    return None


def explain(
    exc: msgspec.ValidationError, type_: Any, phrases: Mapping[str, str] | None = None
) -> tuple[str, str, dict[str, Any]]:
    """(dotted field, sentence, extra details) of msgspec's refusal of a value of ``type_``."""
    phrases = phrases or {}
    parts, text = _path_of(str(exc))
    named = _NAMED.search(text)
    if named:
        parts = [*parts, named.group("name")]
    field = ".".join(parts)
    name = field or "the request body"
    root = mi.type_info(type_)
    if named and named.group("what") == "unknown":
        return field, f"{name} is not a field of this request; check its spelling against the reference", {}
    if named:
        return field, f"{name} is required", {}
    t = type_at(root, parts)
    if t is None:
        return field, f"{name} is not valid here", {}
    sentence = f"{name} must be {rule_of(t, phrases)}"
    got = re.search(r", got `(?P<got>[^`]+)`", text)
    if got:
        sentence += f", not {_JSON_NAMES.get(got.group('got'), got.group('got'))}"
    extra: dict[str, Any] = {}
    if (pattern := _pattern_of(t)) is not None and "regex" in text:
        extra["pattern"] = pattern
    return field, sentence, extra

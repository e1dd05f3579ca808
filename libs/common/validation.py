"""Decoding request bodies into msgspec structs with errors that name the field."""

from __future__ import annotations

import json
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any, TypeVar

import msgspec

from common.errors import ErrorCode, ServiceError, invalid
from common.wording import explain

T = TypeVar("T")

_numbers = msgspec.json.Decoder(float_hook=Decimal)  # numbers as written, never through float


def _refusal(exc: msgspec.ValidationError, type_: Any, phrases: Mapping[str, str] | None) -> ServiceError:
    """msgspec's refusal as a sentence naming the field and its rule (common.wording)."""
    field, message, extra = explain(exc, type_, phrases)
    return ServiceError(
        ErrorCode.INVALID_REQUEST, message, details={"field": field, **extra} if field else extra
    )


def _int_if_integral(text: str) -> int | float:
    d = Decimal(text)
    return int(d) if d.is_finite() and d == d.to_integral_value() else float(text)


_integral = msgspec.json.Decoder(float_hook=_int_if_integral)


def decode_body(raw: bytes, type_: type[T], phrases: Mapping[str, str] | None = None) -> T:
    """Decode JSON into ``type_``; malformed or invalid input raises 400 with ``details.field``.
    Every number in the body is bounded first (:func:`check_numbers`), whatever its field."""
    try:
        check_numbers(_numbers.decode(raw))
    except (msgspec.DecodeError, RecursionError):
        # Not JSON, or a number too large to decode (named here, before any other complaint).
        huge = nonfinite_field(raw)
        if huge is not None:
            raise invalid(huge, BAD_NUMBER) from None
    try:
        try:
            return msgspec.json.decode(raw, type=type_)
        except msgspec.ValidationError as exc:
            if "Expected `int`, got `float`" not in str(exc):
                raise
            # 602.0 is the integer 602 in JSON (and in JSON Schema's "integer"): read integral
            # numbers as integers and try once more (numbers are bounded above, so this is cheap).
            return msgspec.json.decode(msgspec.json.encode(_integral.decode(raw)), type=type_)
    except msgspec.ValidationError as exc:
        huge = nonfinite_field(raw) if "out of range" in str(exc) else None
        if huge is not None:
            raise invalid(huge, BAD_NUMBER) from None
        raise _refusal(exc, type_, phrases) from None
    except (msgspec.DecodeError, RecursionError):
        raise not_json(raw, "") from None


# ---- bounded numbers (docs/security.md, "OWASP API Security Top 10", API4) ----

MAX_DIGITS = 18
MAX_EXPONENT = 18
BAD_NUMBER = "numbers must be finite, with at most 18 significant digits and exponent within +-18"


def number_problem(value: Decimal | int) -> str | None:
    """Why a JSON number is out of bounds (None if it is fine): at most 18 significant digits
    and no exponent beyond +-18, so nothing stored or echoed can outgrow its input."""
    d = Decimal(value)
    if not d.is_finite():
        return "numbers must be finite"
    _sign, digits, exponent = d.as_tuple()
    if not isinstance(exponent, int):
        return "numbers must be finite"
    if (
        exponent < -MAX_EXPONENT
        or (not d.is_zero() and d.adjusted() > MAX_EXPONENT)
        or exponent > MAX_EXPONENT
    ):
        return f"numbers must lie within 1e-{MAX_EXPONENT} and 1e{MAX_EXPONENT}"
    stripped = list(digits)
    while stripped and stripped[-1] == 0:
        stripped.pop()
    significant = len(stripped)
    if significant > MAX_DIGITS:
        return f"numbers have at most {MAX_DIGITS} significant digits"
    return None


def check_numbers(doc: Any, path: str = "") -> None:
    """Every number in a decoded JSON document (Decimal or int) within bounds; the first that
    is not raises ``invalid_request`` naming its dotted path."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            check_numbers(v, f"{path}.{k}" if path else str(k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            check_numbers(v, f"{path}.{i}" if path else str(i))
    elif isinstance(doc, (Decimal, int, float)) and not isinstance(doc, bool):
        problem = number_problem(Decimal(str(doc)) if isinstance(doc, float) else doc)
        if problem:
            raise invalid(path[:200] or "body", problem)


_NONFINITE = object()
_HUGE = object()


def nonfinite_field(raw: bytes) -> str | None:
    """The dotted path of a NaN / Infinity literal or of an integer too large to decode in
    otherwise valid JSON (msgspec refuses both before any field is known; this names the field
    for the error). Only on the error path; the caller says "numbers must be bounded"."""

    def constant(_: str) -> object:
        return _NONFINITE

    def integer(text: str) -> object:
        return _HUGE if len(text.lstrip("-")) > MAX_DIGITS else int(text)

    try:
        doc = json.loads(raw, parse_constant=constant, parse_int=integer)
    except (ValueError, RecursionError):
        return None

    def find(node: Any, path: str) -> str | None:
        if node is _NONFINITE or node is _HUGE:
            return path or "body"
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for k, v in items:
            if (hit := find(v, f"{path}.{k}" if path else str(k))) is not None:
                return hit
        return None

    return find(doc, "")


def bounded_decimal(field: str, value: object, *, places: int, low: Decimal, high: Decimal) -> str:
    """A decimal given as a string or a bounded JSON number, within [low, high] with at most
    ``places`` decimals; returned as its plain normalised text (no exponent)."""
    if isinstance(value, bool) or not isinstance(value, (str, int, Decimal, float)):
        raise invalid(field, f"{field} must be a decimal string or a number")
    try:
        d = Decimal(str(value).strip()) if isinstance(value, (str, float)) else Decimal(value)
    except InvalidOperation:
        raise invalid(field, f"{field} must be a decimal string or a number") from None
    problem = number_problem(d)
    if problem:
        raise invalid(field, f"{field}: {problem}")
    if not low <= d <= high:
        raise invalid(field, f"{field} must be between {low} and {high}")
    exponent = d.normalize().as_tuple().exponent
    if isinstance(exponent, int) and -exponent > places:
        raise invalid(field, f"{field} must have at most {places} decimal places")
    return format(d.normalize(), "f")


def convert(
    obj: object, type_: type[T], *, strict: bool = True, phrases: Mapping[str, str] | None = None
) -> T:
    """``strict=False`` lets strings stand for numbers and booleans (query parameters);
    ``phrases`` words the patterns of ``type_`` for its refusals (common.wording)."""
    try:
        return msgspec.convert(obj, type=type_, strict=strict)
    except msgspec.ValidationError as exc:
        raise _refusal(exc, type_, phrases) from None


def not_json(raw: bytes, field: str) -> ServiceError:
    """The refusal of a body that does not parse: 400 on the non-finite number it holds (NaN,
    Infinity), if any, else "not valid JSON" on ``field``."""
    nonfinite = nonfinite_field(raw)
    if nonfinite is not None:
        return invalid(nonfinite, BAD_NUMBER)
    return ServiceError(ErrorCode.INVALID_REQUEST, "request body is not valid JSON", details={"field": field})


MAX_NESTING = 32


def nesting_depth(raw: bytes) -> int:
    """How deeply the JSON document ``raw`` nests objects and arrays (brackets inside strings
    do not count). Read before decoding: a document nested thousands deep must be refused
    without recursing into it."""
    depth = deepest = 0
    in_string = escaped = False
    for byte in raw:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x7B, 0x5B):  # { [
            depth += 1
            deepest = max(deepest, depth)
        elif byte in (0x7D, 0x5D):  # } ]
            depth -= 1
    return deepest


def check_nesting(raw: bytes, limit: int = MAX_NESTING) -> None:
    """400 invalid_request when ``raw`` nests deeper than ``limit`` (docs/security.md,
    "Round 3")."""
    if nesting_depth(raw) > limit:
        raise ServiceError(
            ErrorCode.INVALID_REQUEST,
            f"the request body nests deeper than {limit} levels",
            details={"reason": "too_deep", "limit": limit},
        )


# What ``\s`` means in a pattern differs by engine: Python's ``re`` counts U+001C-U+001F and
# U+0085 as space, ECMAScript (the JSON Schema a partner's or schemathesis' validator reads)
# counts U+FEFF instead. A pattern in a published document therefore names its spaces
# explicitly, inside a character class, so msgspec and every reader of the document agree (the
# admin fuzz test found a support_email with U+0085 that the document allowed and msgspec refused).
# ``$`` differs too: Python's lets a single trailing newline through ("US\n" matched ^[A-Z]{2}$),
# ECMAScript's does not. ``$(?!\n)`` reads the same in both, so every anchored pattern ends so.
END = r"$(?!\n)"
SPACE = r"\t\n\v\f\r \x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"


def ci_pattern(values: tuple[str, ...]) -> str:
    """An anchored regex matching any of ``values`` in any letter case (no inline flags, and
    :data:`END` for its end, so it reads the same in Python and ECMAScript / JSON Schema)."""

    def one(v: str) -> str:
        return "".join(f"[{c.upper()}{c.lower()}]" if c.isalpha() else c for c in v)

    return "^(" + "|".join(one(v) for v in sorted(values, key=len, reverse=True)) + ")" + END

"""Helpers the endpoint builders share: decode the body or query, stamp a command."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any, TypeVar

from common.errors import ErrorCode, ServiceError, invalid
from common.ids import new_id
from common.validation import convert
from gateway.pipeline import Call
from gateway.wording import PHRASES

T = TypeVar("T")

_ID = re.compile(r"^[A-Za-z0-9_\-]{1,128}$")


def body_of(call: Call, type_: type[T]) -> T:
    """The JSON body as ``type_``; errors name the dotted field (``body`` for the whole)."""
    if not isinstance(call.body, dict):
        raise invalid("body", "the request body must be a JSON object")
    try:
        return convert(_integral(call.body), type_, phrases=PHRASES)
    except ServiceError as err:
        err.details.setdefault("field", "body")
        raise


def _integral(value: Any) -> Any:
    """JSON numbers with a zero fraction (``3600.0``) are integers, as JSON Schema counts them;
    fractional numbers stay Decimal (the body is decoded without floats)."""
    if isinstance(value, Decimal) and value.is_finite() and value == value.to_integral_value():
        return int(value) if value.adjusted() < 64 else value
    if isinstance(value, dict):
        return {k: _integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integral(v) for v in value]
    return value


def query_of(call: Call, type_: type[T]) -> T:
    try:
        return convert(call.query, type_, strict=False, phrases=PHRASES)
    except ServiceError as err:
        err.details.setdefault("field", "query")
        raise


def path_id(call: Call, name: str) -> str:
    """A path id; one that cannot exist is simply not found (never a 400 that probes ids)."""
    value = call.params.get(name, "")
    if not _ID.match(value):
        raise ServiceError(ErrorCode.NOT_FOUND, f"{name} {value[:40]!r} not found")
    return value


def stamp(call: Call) -> dict[str, Any]:
    """The fields every command shares."""
    return {"command_id": new_id("cmd"), "ctx": call.ctx}

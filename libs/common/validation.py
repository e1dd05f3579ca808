"""Decoding request bodies into msgspec structs with errors that name the field."""

from __future__ import annotations

import re
from typing import TypeVar

import msgspec

from common.errors import ErrorCode, ServiceError

T = TypeVar("T")

_PATH = re.compile(r" - at `\$(?P<path>[^`]*)`$")


def _field_of(message: str) -> tuple[str, str]:
    m = _PATH.search(message)
    if not m:
        missing = re.search(r"(?:missing required|unknown) field `([^`]+)`", message)
        return (missing.group(1) if missing else ""), message
    path = m.group("path")
    text = message[: m.start()]
    missing = re.search(r"(?:missing required|unknown) field `([^`]+)`", text)
    parts = [p for p in re.split(r"\.|\[(\d+)\]", path) if p]
    if missing:
        parts.append(missing.group(1))
    return ".".join(parts), text


def decode_body(raw: bytes, type_: type[T]) -> T:
    """Decode JSON into ``type_``; malformed or invalid input raises 400 with ``details.field``."""
    try:
        return msgspec.json.decode(raw, type=type_)
    except msgspec.ValidationError as exc:
        field, message = _field_of(str(exc))
        raise ServiceError(
            ErrorCode.INVALID_REQUEST, message or "invalid request", details={"field": field} if field else {}
        ) from None
    except msgspec.DecodeError:
        raise ServiceError(
            ErrorCode.INVALID_REQUEST, "request body is not valid JSON", details={"field": ""}
        ) from None


def convert(obj: object, type_: type[T], *, strict: bool = True) -> T:
    """``strict=False`` lets strings stand for numbers and booleans (query parameters)."""
    try:
        return msgspec.convert(obj, type=type_, strict=strict)
    except msgspec.ValidationError as exc:
        field, message = _field_of(str(exc))
        raise ServiceError(
            ErrorCode.INVALID_REQUEST, message or "invalid request", details={"field": field} if field else {}
        ) from None

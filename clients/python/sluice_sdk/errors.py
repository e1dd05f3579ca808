"""Typed errors: every failure the gateway answers, by its envelope's ``code``.

Each carries ``code``, ``reason`` (``details.reason``), ``field`` (``details.field``),
``details``, ``status`` and ``request_id`` (the ``X-Request-Id`` of the answer: quote it to
support). Failures that never reached an answer are :class:`ConnectionFailed` (the network) and
:class:`Throttled` (refused by this client's adaptive throttle before sending).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from email.utils import parsedate_to_datetime
from typing import Any


class SluiceError(Exception):
    """An answer or failure the SDK does not turn into a result."""

    code: str = "error"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        status: int | None = None,
        details: Mapping[str, Any] | None = None,
        request_id: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.status = status
        self.details: dict[str, Any] = dict(details or {})
        self.request_id = request_id or self.details.get("request_id")
        self.retry_after = retry_after

    @property
    def reason(self) -> str | None:
        value = self.details.get("reason")
        return str(value) if value is not None else None

    @property
    def field(self) -> str | None:
        value = self.details.get("field")
        return str(value) if value is not None else None

    def __str__(self) -> str:
        parts = [f"{self.code}: {self.message}"]
        if self.reason:
            parts.append(f"reason={self.reason}")
        if self.field:
            parts.append(f"field={self.field}")
        if self.request_id:
            parts.append(f"request_id={self.request_id}")
        return " ".join(parts)


class InvalidRequest(SluiceError):
    code = "invalid_request"


class Unauthorized(SluiceError):
    code = "unauthorized"


class Forbidden(SluiceError):
    code = "forbidden"


class NotFound(SluiceError):
    code = "not_found"


class IdempotencyKeyRequired(SluiceError):
    code = "idempotency_key_required"


class IdempotencyConflict(SluiceError):
    """The key was used before with another request (409 ``idempotency_replay_mismatch``)."""

    code = "idempotency_replay_mismatch"


class RateLimited(SluiceError):
    code = "rate_limited"


class InternalError(SluiceError):
    code = "internal_error"


class ProviderError(SluiceError):
    code = "provider_error"


class ProviderUnavailable(SluiceError):
    """503: no answer in time, or shed at the door (``reason`` ``overloaded``)."""

    code = "provider_unavailable"


class ConnectionFailed(SluiceError):
    """No answer came: the connection was refused or reset, the name did not resolve, TLS
    failed, or the attempt timed out. The request may or may not have reached the gateway (an
    operation with an idempotency key is safe to repeat with it). The network's own exception
    is ``__cause__``; nothing here says the gateway is loaded (that is :class:`Throttled`)."""

    code = "connection_failed"


class DeadlineExceeded(SluiceError):
    """The operation's overall deadline (``options={"timeout": ...}``) passed before it
    completed; the last attempt's failure is ``__cause__``. An operation with an idempotency key
    may still have been done: repeat it with the same key to learn its outcome."""

    code = "deadline_exceeded"


class Throttled(SluiceError):
    """Refused by this client's adaptive throttle before sending: the gateway has been answering
    most recent requests with 429 or 503 (requests that got no answer do not count)."""

    code = "client_throttled"


BY_CODE: dict[str, type[SluiceError]] = {
    cls.code: cls
    for cls in (
        InvalidRequest,
        Unauthorized,
        Forbidden,
        NotFound,
        IdempotencyKeyRequired,
        IdempotencyConflict,
        RateLimited,
        InternalError,
        ProviderError,
        ProviderUnavailable,
    )
}


def retry_after_s(headers: Mapping[str, str]) -> float | None:
    """``Retry-After`` in seconds (RFC 9110 10.2.3: delay-seconds or an HTTP date)."""
    value = next((v for k, v in headers.items() if k.lower() == "retry-after"), None)
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        from datetime import UTC, datetime

        return max(0.0, (parsedate_to_datetime(value) - datetime.now(UTC)).total_seconds())
    except (TypeError, ValueError):
        return None


def connection_failed(exc: BaseException) -> ConnectionFailed:
    """The error of an attempt that got no answer, ``exc`` (the network's) as its cause."""
    error = ConnectionFailed(f"no answer from the gateway: {type(exc).__name__}: {exc}")
    error.__cause__ = exc
    return error


def error_from_answer(status: int, headers: Mapping[str, str], content: bytes) -> SluiceError:
    """The typed error of a non-2xx answer (its envelope when it has one)."""
    request_id = next((v for k, v in headers.items() if k.lower() == "x-request-id"), None)
    try:
        body = json.loads(content)
        error = body["error"]
        code, message, details = str(error["code"]), str(error.get("message", "")), error.get("details") or {}
    except (ValueError, KeyError, TypeError):
        code, message, details = "http_" + str(status), content[:200].decode("utf-8", "replace"), {}
    cls = BY_CODE.get(code, SluiceError)
    return cls(
        message or code,
        code=code,
        status=status,
        details=details if isinstance(details, dict) else {},
        request_id=request_id,
        retry_after=retry_after_s(headers),
    )

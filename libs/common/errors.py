"""Error codes, their HTTP statuses (docs/guides/errors.md) and the service exception."""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class ErrorCode(StrEnum):
    INVALID_REQUEST = "invalid_request"
    UNAUTHORIZED = "unauthorized"
    FORBIDDEN = "forbidden"
    NOT_FOUND = "not_found"
    IDEMPOTENCY_KEY_REQUIRED = "idempotency_key_required"
    IDEMPOTENCY_REPLAY_MISMATCH = "idempotency_replay_mismatch"
    RATE_LIMITED = "rate_limited"
    INTERNAL_ERROR = "internal_error"
    PROVIDER_ERROR = "provider_error"
    PROVIDER_UNAVAILABLE = "provider_unavailable"


HTTP_STATUS: dict[ErrorCode, int] = {
    ErrorCode.INVALID_REQUEST: 400,
    ErrorCode.UNAUTHORIZED: 401,
    ErrorCode.FORBIDDEN: 403,
    ErrorCode.NOT_FOUND: 404,
    ErrorCode.IDEMPOTENCY_KEY_REQUIRED: 400,
    ErrorCode.IDEMPOTENCY_REPLAY_MISMATCH: 409,
    ErrorCode.RATE_LIMITED: 429,
    ErrorCode.INTERNAL_ERROR: 500,
    ErrorCode.PROVIDER_ERROR: 502,
    ErrorCode.PROVIDER_UNAVAILABLE: 503,
}


class Reason(StrEnum):
    """``details.reason`` values of refusals (docs/guides/errors.md, "Reasons")."""

    JURISDICTION_RESTRICTED = "jurisdiction_restricted"
    ROUTE_NOT_APPROVED = "route_not_approved"
    TRANSFER_CAP_EXCEEDED = "transfer_cap_exceeded"
    EXTERNAL_ACCOUNT_NOT_APPROVED = "external_account_not_approved"
    TENANT_NOT_LIVE = "tenant_not_live"
    TENANT_DISABLED = "tenant_disabled"
    INSUFFICIENT_FUNDS = "insufficient_funds"
    #: A second command naming a transfer id another command holds (a partner never sees
    #: it: the gateway makes a transfer id per request).
    TRANSFER_ID_REUSED = "transfer_id_reused"


class Unavailable(StrEnum):
    """``details.reason`` of every 503 the gateway sends (docs/guides/errors.md, "Reasons"). Only
    ``overloaded`` is a refusal for overload (nothing was taken); the others are failures of
    admitted work."""

    OVERLOADED = "overloaded"  # the door: no place in the lane
    UPSTREAM_TIMEOUT = "upstream_timeout"  # no answer within the gateway timeout
    STORE_UNAVAILABLE = "store_unavailable"  # Redis, PostgreSQL or the broker did not answer
    IN_FLIGHT = "in_flight"  # the same Idempotency-Key is being decided


class ServiceError(Exception):
    """A refusal that names its reason; rendered as the error envelope."""

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        *,
        status: int | None = None,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status or HTTP_STATUS[code]
        self.details = dict(details or {})
        self.headers = dict(headers or {})


def invalid(field: str, message: str, **details: Any) -> ServiceError:
    return ServiceError(ErrorCode.INVALID_REQUEST, message, details={"field": field, **details})


def forbidden(reason: str, message: str, **details: Any) -> ServiceError:
    return ServiceError(ErrorCode.FORBIDDEN, message, details={"reason": reason, **details})


def not_found(what: str) -> ServiceError:
    return ServiceError(ErrorCode.NOT_FOUND, f"{what} not found")


def unavailable(reason: Unavailable, message: str, retry_after_s: int = 1) -> ServiceError:
    """A 503 ``provider_unavailable`` naming its ``details.reason``, with ``Retry-After``."""
    return ServiceError(
        ErrorCode.PROVIDER_UNAVAILABLE,
        message,
        details={"reason": str(reason)},
        headers={"Retry-After": str(retry_after_s)},
    )


def envelope(code: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"code": code, "message": message}
    if details is not None:
        body["details"] = details
    return {"success": False, "error": body}

"""Error codes, their HTTP statuses (docs/guides/errors.md) and the service exception."""

from __future__ import annotations

from dataclasses import dataclass
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
    ADDRESS_SCREENED = "address_screened"
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


@dataclass(frozen=True)
class Explained:
    """One row of the errors guide: the code a code or reason travels with, and words for it."""

    code: ErrorCode
    means: str
    action: str


#: Every error code: what it means and whether to retry (the "Codes" table of
#: docs/guides/errors.md is generated from this; tools/codegen/errors_page.py).
CODES: dict[ErrorCode, Explained] = {
    ErrorCode.INVALID_REQUEST: Explained(
        ErrorCode.INVALID_REQUEST,
        "the body or a route rule failed (`details.field`); also 405 (wrong method), 413 (body over"
        " 64 KiB) and 415 (not `application/json`) with this code",
        "no: correct the request",
    ),
    ErrorCode.IDEMPOTENCY_KEY_REQUIRED: Explained(
        ErrorCode.IDEMPOTENCY_KEY_REQUIRED, "a mutating request without `Idempotency-Key`", "no"
    ),
    ErrorCode.UNAUTHORIZED: Explained(
        ErrorCode.UNAUTHORIZED,
        "bearer credential missing, invalid, expired or revoked (`WWW-Authenticate: Bearer`)",
        "no",
    ),
    ErrorCode.FORBIDDEN: Explained(
        ErrorCode.FORBIDDEN,
        "scope, mode, IP allow-list, tenant not live, or a compliance refusal (`details.reason`)",
        "no",
    ),
    ErrorCode.NOT_FOUND: Explained(
        ErrorCode.NOT_FOUND, "unknown route, or an id this tenant and mode does not own", "no"
    ),
    ErrorCode.IDEMPOTENCY_REPLAY_MISMATCH: Explained(
        ErrorCode.IDEMPOTENCY_REPLAY_MISMATCH, "the key was used for a different request", "no"
    ),
    ErrorCode.RATE_LIMITED: Explained(
        ErrorCode.RATE_LIMITED, "the tenant's per-minute limit; `Retry-After`", "yes, after `Retry-After`"
    ),
    ErrorCode.INTERNAL_ERROR: Explained(
        ErrorCode.INTERNAL_ERROR, "the gateway could not complete the operation", "a few times, same key"
    ),
    ErrorCode.PROVIDER_ERROR: Explained(
        ErrorCode.PROVIDER_ERROR, "a service behind the gateway rejected the command unexpectedly", "no"
    ),
    ErrorCode.PROVIDER_UNAVAILABLE: Explained(
        ErrorCode.PROVIDER_UNAVAILABLE,
        "not decided now; `Retry-After`; `details.reason` below",
        "yes, after `Retry-After`, same key",
    ),
}

#: Every ``details.reason`` a partner can meet, with the code (hence the HTTP status) it
#: travels with. The services take a refusal's code from here (:func:`reason_code`), and the
#: "Reasons" table of docs/guides/errors.md is generated from it, so the two cannot disagree.
REASONS: dict[str, Explained] = {
    Reason.JURISDICTION_RESTRICTED: Explained(
        ErrorCode.FORBIDDEN,
        "a customer or counterparty located in DZ, BI, CN, JP or TN (every mode)",
        "nothing: the service is unavailable there",
    ),
    Reason.ROUTE_NOT_APPROVED: Explained(
        ErrorCode.FORBIDDEN,
        "the (rail, currency) route is not approved for this tenant and mode",
        "ask for the route (operators: `approve_route`)",
    ),
    Reason.TRANSFER_CAP_EXCEEDED: Explained(
        ErrorCode.FORBIDDEN, "above the per-transfer or daily cap", "a smaller amount, or a cap change"
    ),
    Reason.EXTERNAL_ACCOUNT_NOT_APPROVED: Explained(
        ErrorCode.FORBIDDEN, "a payout to an account not approved", "have the account approved"
    ),
    Reason.TENANT_NOT_LIVE: Explained(
        ErrorCode.FORBIDDEN,
        "a live request before the tenant is live",
        "see [Going live](going-live.md)",
    ),
    Reason.TENANT_DISABLED: Explained(
        ErrorCode.FORBIDDEN, "the tenant is stopped by an operator", "contact the operator"
    ),
    Reason.ADDRESS_SCREENED: Explained(
        ErrorCode.FORBIDDEN,
        "a withdrawal to a screened on-chain address",
        "nothing: the address is refused",
    ),
    Reason.TRANSFER_ID_REUSED: Explained(
        ErrorCode.FORBIDDEN,
        "a command named a transfer id another command holds; the gateway makes a new one per"
        " request, so a partner never sees this: it answers a forged command",
        "nothing",
    ),
    "mode_mismatch": Explained(
        ErrorCode.FORBIDDEN,
        "`x-service-mode` names the other mode than the credential's",
        "send the credential's mode (the SDKs do)",
    ),
    "scope_missing": Explained(
        ErrorCode.FORBIDDEN,
        "the key lacks the scope the endpoint needs (`details.scope`)",
        "use a key with it",
    ),
    "ip_not_allowed": Explained(
        ErrorCode.FORBIDDEN,
        "the request came from an address outside the tenant's allow-list",
        "call from one",
    ),
    Reason.INSUFFICIENT_FUNDS: Explained(
        ErrorCode.INVALID_REQUEST,
        "the source wallet cannot cover amount and fee (`details.field` `source.amount`)",
        "fund the wallet, or send less",
    ),
    "too_deep": Explained(
        ErrorCode.INVALID_REQUEST, "the body nests deeper than `details.limit` levels", "flatten the body"
    ),
    "authentication_failures": Explained(
        ErrorCode.RATE_LIMITED,
        "too many failed authentications from this address",
        "fix the credential; retry after `Retry-After`",
    ),
    Unavailable.OVERLOADED: Explained(
        ErrorCode.PROVIDER_UNAVAILABLE,
        "shed at the door before any work (nothing claimed, nothing published); `details.bound`"
        " names the limit that was full",
        "retry after `Retry-After`, same key",
    ),
    Unavailable.UPSTREAM_TIMEOUT: Explained(
        ErrorCode.PROVIDER_UNAVAILABLE,
        "no answer within the gateway timeout (10 s by default): the request may still be carried out",
        "retry with the same key to get its outcome",
    ),
    Unavailable.STORE_UNAVAILABLE: Explained(
        ErrorCode.PROVIDER_UNAVAILABLE,
        "a store the request needs is down (answered within 2 s)",
        "retry after `Retry-After`, same key",
    ),
    Unavailable.IN_FLIGHT: Explained(
        ErrorCode.PROVIDER_UNAVAILABLE,
        "the same key is being decided by another request still in flight",
        "retry after `Retry-After`, same key",
    ),
}


def reason_code(reason: str | None, default: ErrorCode = ErrorCode.FORBIDDEN) -> ErrorCode:
    """The code a refusal for ``reason`` travels with (``default`` for a reason not listed)."""
    entry = REASONS.get(reason) if reason is not None else None
    return entry.code if entry is not None else default


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

from enum import StrEnum


class ErrorObjectCode(StrEnum):
    FORBIDDEN = "forbidden"
    IDEMPOTENCY_KEY_REQUIRED = "idempotency_key_required"
    IDEMPOTENCY_REPLAY_MISMATCH = "idempotency_replay_mismatch"
    INTERNAL_ERROR = "internal_error"
    INVALID_REQUEST = "invalid_request"
    NOT_FOUND = "not_found"
    PROVIDER_ERROR = "provider_error"
    PROVIDER_UNAVAILABLE = "provider_unavailable"
    RATE_LIMITED = "rate_limited"
    UNAUTHORIZED = "unauthorized"

    def __str__(self) -> str:
        return str(self.value)

"""Per-request options, the last keyword of every resource method (``options={...}``)."""

from __future__ import annotations

from typing import TypedDict


class RequestOptions(TypedDict, total=False):
    """``idempotency_key``: the operation's key, sent on every attempt (default: the body's
    ``idempotency_key`` for transfers and payouts, else a new one); keep it with your order to
    repeat the operation safely after a restart.
    ``timeout``: seconds for the whole operation, every attempt and wait included (an overall
    deadline; each attempt is also bounded by the client's ``Config.timeout_s``); past it,
    :class:`~sluice_sdk.errors.DeadlineExceeded`.
    ``max_attempts``: this operation's attempts, the first included (1: never retry)."""

    idempotency_key: str
    timeout: float
    max_attempts: int

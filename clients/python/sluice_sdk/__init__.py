"""Sluice's Python SDK: the generated calls and models (``sluice_api``) behind a thin layer
that calls them the right way. See ``clients/README.md``."""

from sluice_sdk._version import __version__
from sluice_sdk.client import AsyncSluice, Sluice, new_key
from sluice_sdk.config import Config
from sluice_sdk.errors import (
    ConnectionFailed,
    Forbidden,
    IdempotencyConflict,
    IdempotencyKeyRequired,
    InternalError,
    InvalidRequest,
    NotFound,
    ProviderError,
    ProviderUnavailable,
    RateLimited,
    SluiceError,
    Throttled,
    Unauthorized,
)
from sluice_sdk.retry import AdaptiveThrottle, RetryPolicy, Stats
from sluice_sdk.webhooks import WebhookRefused, verify_webhook

__all__ = [
    "AdaptiveThrottle",
    "AsyncSluice",
    "Config",
    "ConnectionFailed",
    "Forbidden",
    "IdempotencyConflict",
    "IdempotencyKeyRequired",
    "InternalError",
    "InvalidRequest",
    "NotFound",
    "ProviderError",
    "ProviderUnavailable",
    "RateLimited",
    "RetryPolicy",
    "Sluice",
    "SluiceError",
    "Stats",
    "Throttled",
    "Unauthorized",
    "WebhookRefused",
    "__version__",
    "new_key",
    "verify_webhook",
]

"""Sluice's Python SDK: resources (``sluice.customers.create(...)``) with typed parameters
(``sluice_sdk.schemas``), over the generated calls and models (``sluice_api``). See
``clients/README.md``."""

from sluice_sdk._version import __version__
from sluice_sdk.client import AsyncSluice, Lenient, Sluice
from sluice_sdk.config import Config
from sluice_sdk.core import new_key
from sluice_sdk.errors import (
    ConnectionFailed,
    DeadlineExceeded,
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
from sluice_sdk.events import WebhookEvent
from sluice_sdk.options import RequestOptions
from sluice_sdk.pages import AsyncPage, Page
from sluice_sdk.results import ResponseInfo, response_of
from sluice_sdk.retry import AdaptiveThrottle, RetryPolicy, Stats
from sluice_sdk.webhooks import SignedDelivery, WebhookRefused, sign_test_event, verify_webhook

__all__ = [
    "AdaptiveThrottle",
    "AsyncPage",
    "AsyncSluice",
    "Config",
    "ConnectionFailed",
    "DeadlineExceeded",
    "Forbidden",
    "IdempotencyConflict",
    "IdempotencyKeyRequired",
    "InternalError",
    "InvalidRequest",
    "Lenient",
    "NotFound",
    "Page",
    "ProviderError",
    "ProviderUnavailable",
    "RateLimited",
    "RequestOptions",
    "ResponseInfo",
    "RetryPolicy",
    "SignedDelivery",
    "Sluice",
    "SluiceError",
    "Stats",
    "Throttled",
    "Unauthorized",
    "WebhookEvent",
    "WebhookRefused",
    "__version__",
    "new_key",
    "response_of",
    "sign_test_event",
    "verify_webhook",
]

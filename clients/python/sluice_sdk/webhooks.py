"""Verifying a webhook delivery, with the Standard Webhooks library (``standardwebhooks``).

Sluice signs the Standard Webhooks way under its own header names (docs/guides/webhooks.md,
"Verify every delivery"):
``x-service-webhook-id``, ``x-service-timestamp`` and ``x-service-signature`` are the
standard's ``webhook-id``, ``webhook-timestamp`` and ``webhook-signature``. The library checks
the HMAC-SHA256 signatures in constant time and refuses a timestamp more than 5 minutes away
(a replay of an old delivery); while a secret is being rotated a delivery carries one
signature per secret, and any one of them verifies.
"""

from __future__ import annotations

import binascii
import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from sluice_sdk.events import WebhookEvent

HEADERS = {
    "x-service-webhook-id": "webhook-id",
    "x-service-timestamp": "webhook-timestamp",
    "x-service-signature": "webhook-signature",
}


class WebhookRefused(Exception):
    """The delivery is not Sluice's: a signature that does not verify, a timestamp outside the
    tolerance, or a header missing. Answer 400 and do not act on it."""


def standard_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The delivery's headers under the Standard Webhooks names (header names are matched
    without regard to case, as HTTP has them)."""
    lowered = {k.lower(): v for k, v in headers.items()}
    return {std: lowered[ours] for ours, std in HEADERS.items() if ours in lowered}


def verify_webhook(
    payload: bytes | str, headers: Mapping[str, str], secret: str | Sequence[str]
) -> WebhookEvent:
    """The event (:data:`~sluice_sdk.events.WebhookEvent`, discriminated by ``type``) of a
    verified delivery, else :class:`WebhookRefused`. ``payload`` is the raw body, exactly as
    received; ``secret`` is the endpoint's ``whsec_...`` secret, or several (the new and the old
    during a rotation).
    Deliveries are at least once: deduplicate on the event's ``id``."""
    secrets = [secret] if isinstance(secret, str) else list(secret)
    if not secrets:
        raise ValueError("no secret given")
    std = standard_headers(headers)
    last: Exception | None = None
    for s in secrets:
        try:
            return cast(WebhookEvent, Webhook(s).verify(payload, std))
        except (WebhookVerificationError, ValueError, binascii.Error) as exc:
            last = exc
    raise WebhookRefused(str(last))


@dataclass(frozen=True)
class SignedDelivery:
    """A delivery as Sluice would send it: the raw ``body`` and its ``headers``."""

    body: bytes
    headers: dict[str, str]


def sign_test_event(
    secret: str | Sequence[str], event: Mapping[str, Any], *, at: datetime | None = None
) -> SignedDelivery:
    """Sign ``event`` as Sluice signs a delivery, for your own receiver's tests::

        delivery = sign_test_event(secret, {"type": "transfer.created", "data": {...}})
        client.post("/hooks", content=delivery.body, headers=delivery.headers)

    Missing envelope fields get test values (``id`` ``evt_test_...``, ``created_at`` now,
    ``api_version``, ``mode`` ``sandbox``); ``at`` is the signature's time (default now);
    several secrets give one signature each, as during a rotation."""
    secrets = [secret] if isinstance(secret, str) else list(secret)
    if not secrets:
        raise ValueError("no secret given")
    when = at or datetime.now(UTC)
    full = {
        "id": "evt_test_" + uuid.uuid4().hex,
        "created_at": when.isoformat().replace("+00:00", "Z"),
        "api_version": "1.0.1",
        "mode": "sandbox",
        **event,
    }
    body = json.dumps(full, separators=(",", ":"))
    signatures = " ".join(Webhook(s).sign(str(full["id"]), when, body) for s in secrets)
    headers = {
        "x-service-webhook-id": str(full["id"]),
        "x-service-timestamp": str(int(when.timestamp())),
        "x-service-signature": signatures,
    }
    return SignedDelivery(body.encode(), headers)

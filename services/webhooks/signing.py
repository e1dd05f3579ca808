"""Signing secrets: generation, encryption at rest, and Standard Webhooks signatures.

Signatures follow docs/guides/webhooks.md, "Verify every delivery" (the Standard Webhooks scheme
under our header names): ``v1,<base64 HMAC-SHA256(key, "{id}.{timestamp}.{body}")>`` where
``key`` is the base64-decoded part of ``whsec_<base64>``. We sign with the standard library
(five lines of ``hmac``) rather than the ``standardwebhooks`` package: that package is a
test-only dependency here, wants the body as ``str`` and the time as ``datetime``, and using it
on both sides would make the interoperability test circular. The tests verify our deliveries
with it instead.

Secrets never appear in logs and are stored only sealed with the key ring
(``SLUICE_ENCRYPTION_KEYS``, :mod:`common.keyring`); the row id is the associated data, so a
ciphertext copied to another row does not decrypt, and rotating the ring keeps them readable.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os

from common.keyring import KeyRing, KeyRingError

SECRET_PREFIX = "whsec_"  # a prefix  # nosec B105


def new_secret() -> str:
    return SECRET_PREFIX + base64.b64encode(os.urandom(32)).decode()


def secret_key(secret: str) -> bytes:
    raw = secret[len(SECRET_PREFIX) :] if secret.startswith(SECRET_PREFIX) else secret
    return base64.b64decode(raw)


def sign(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """One ``v1,<base64>`` signature over ``{id}.{timestamp}.{body}`` (the exact bytes sent)."""
    signed = msg_id.encode() + b"." + str(timestamp).encode() + b"." + body
    digest = hmac.new(secret_key(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def signature_header(secrets: list[str], msg_id: str, timestamp: int, body: bytes) -> str:
    """Space-separated signatures, current secret first (several while rotating)."""
    return " ".join(sign(s, msg_id, timestamp, body) for s in secrets)


class SecretBox:
    """Signing secrets (and inbox results holding them) at rest, sealed with the key ring."""

    def __init__(self, ring: KeyRing) -> None:
        self.ring = ring

    def seal(self, plaintext: bytes, context: str) -> bytes:
        return self.ring.seal(plaintext, context)

    def open(self, sealed: bytes, context: str) -> bytes:
        try:
            return self.ring.open(sealed, context)
        except KeyRingError as exc:
            raise ValueError(str(exc)) from None

    def seal_secret(self, secret: str, webhook_id: str) -> bytes:
        return self.seal(secret.encode(), "secret:" + webhook_id)

    def open_secret(self, sealed: bytes, webhook_id: str) -> str:
        return self.open(sealed, "secret:" + webhook_id).decode()

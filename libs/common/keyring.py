"""The key ring: AES-256-GCM sealing for every value kept at rest or sent in a message.

``SLUICE_ENCRYPTION_KEYS`` is ``kid:base64key,kid:base64key,...`` (32-byte keys). The first
key seals; every key opens, so rotating means putting a new key first and keeping the old one
until nothing sealed under it is left. A sealed value names its key:

    0x02 | len(kid) | kid | 12-byte nonce | ciphertext+tag

The caller's ``context`` (a row id, a Redis record name) is the associated data, so a
ciphertext copied to another place does not open.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import secrets

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

VERSION = 0x02
_KID = re.compile(r"^[A-Za-z0-9_.-]{1,32}$")


class KeyRingError(ValueError):
    """A malformed key ring setting, or a ciphertext that does not open."""


def key_entries(setting: str, what: str, error: type[ValueError]) -> list[tuple[str, bytes]]:
    """The ``(kid, key bytes)`` of a ``kid:base64,...`` setting (the key ring's, the signing and
    verification keys' of common.authority), in order; ``error`` names ``what`` is malformed and
    never echoes key material."""
    out = []
    for n, entry in enumerate(e.strip() for e in setting.split(",") if e.strip()):
        kid, sep, b64 = entry.partition(":")
        if not sep:
            raise error(f"entry {n + 1} of {what} is not kid:base64")
        try:
            key = base64.b64decode(b64, validate=True)
        except (binascii.Error, ValueError):
            raise error(f"key {kid[:32]!r} of {what} is not valid base64") from None
        out.append((kid, key))
    return out


class KeyRing:
    def __init__(self, keys: list[tuple[str, bytes]]) -> None:
        if not keys:
            raise KeyRingError("the key ring needs at least one key")
        self._keys: dict[str, AESGCM] = {}
        for kid, key in keys:
            if not _KID.match(kid):
                raise KeyRingError(f"key id {kid[:40]!r} must be 1-32 of A-Z a-z 0-9 _ . -")
            if len(key) != 32:
                raise KeyRingError(f"key {kid!r} must be 32 bytes (base64 of 32 random bytes)")
            if kid in self._keys:
                raise KeyRingError(f"key id {kid!r} appears twice")
            self._keys[kid] = AESGCM(key)
        self.current = keys[0][0]

    @classmethod
    def parse(cls, setting: str) -> KeyRing:
        """From ``kid:base64key,...``; the error never echoes key material."""
        return cls(key_entries(setting, "the key ring", KeyRingError))

    @property
    def kids(self) -> list[str]:
        return list(self._keys)

    def seal(self, plaintext: bytes, context: str) -> bytes:
        kid = self.current.encode()
        nonce = os.urandom(12)
        sealed = self._keys[self.current].encrypt(nonce, plaintext, context.encode())
        return bytes([VERSION, len(kid)]) + kid + nonce + sealed

    def open(self, sealed: bytes, context: str) -> bytes:
        if len(sealed) < 2 or sealed[0] != VERSION:
            raise KeyRingError("unknown ciphertext version")
        n = sealed[1]
        kid = sealed[2 : 2 + n].decode(errors="replace")
        aead = self._keys.get(kid)
        if aead is None:
            raise KeyRingError(f"ciphertext sealed under key {kid!r}, which is not in the key ring")
        body = sealed[2 + n :]
        try:
            return aead.decrypt(body[:12], body[12:], context.encode())
        except InvalidTag:
            raise KeyRingError("ciphertext does not open under its key and this context") from None

    def kid_of(self, sealed: bytes) -> str:
        return sealed[2 : 2 + sealed[1]].decode(errors="replace")


def new_key_setting(kid: str | None = None) -> str:
    """One fresh ``kid:base64key`` entry (development and tests generate theirs)."""
    kid = kid or "k" + secrets.token_hex(4)
    return f"{kid}:{base64.b64encode(secrets.token_bytes(32)).decode()}"


# ---- secrets inside messages: never in clear on Kafka, never inferred from partner text
# (docs/security.md, "OWASP API Security Top 10", API3) ----

# The only fields of a reply that may carry a secret, and so the only ones ever opened. A
# secret travels in ``Result.sealed`` (typed bytes), never inside ``data``: partner text in
# ``data`` (an Idempotency-Key, a description) that happens to look like ciphertext is text.
REPLY_SECRET_FIELDS = frozenset({"signing_secret"})


def reply_context(command_id: str) -> str:
    return "reply:" + command_id


def seal_for_reply(ring: KeyRing, text: str, command_id: str) -> bytes:
    """A secret for ``Result.sealed``, bound to the command (a sealed value copied into
    another reply does not open)."""
    return ring.seal(text.encode(), reply_context(command_id))


def open_reply_secrets(
    ring: KeyRing, data: object, sealed: dict[str, bytes] | None, command_id: str
) -> object:
    """``data`` with each secret of ``sealed`` opened under its name (the receiving side).
    Nothing in ``data`` is read; a name outside :data:`REPLY_SECRET_FIELDS`, or secrets for
    an answer that is not an object, is a :class:`KeyRingError` naming no value."""
    if not sealed:
        return data
    unknown = sorted(set(sealed) - REPLY_SECRET_FIELDS)
    if unknown:
        raise KeyRingError(f"a reply carries sealed fields that are not secret fields: {unknown[:5]}")
    if not isinstance(data, dict):
        raise KeyRingError("a reply carries sealed fields but its data is not an object")
    context = reply_context(command_id)
    return {**data, **{name: ring.open(value, context).decode() for name, value in sealed.items()}}

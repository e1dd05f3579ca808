"""The journal's anchors (docs/security.md, "Journal anchors, round 2"): a chain head published
outside PostgreSQL.

The ledger publishes one :class:`JournalAnchor` to ``<prefix>.journal.anchors`` (kept forever,
never compacted) for each hash chain whose head moved, signed with Ed25519 under
``SLUICE_JOURNAL_ANCHOR_KEY`` (``kid:base64seed``, the ledger's alone; the database never holds
it) and checked with ``SLUICE_JOURNAL_ANCHOR_VERIFY_KEYS`` (public keys: whoever verifies needs
no secret). ``signature`` is the base64 Ed25519 signature of :meth:`JournalAnchor.signed_text`;
``kid`` names the key, so keys rotate (several verify keys during a rotation).

The anchors of one chain are chained themselves: ``prev`` is :meth:`JournalAnchor.digest` of the
anchor this one extends (empty for a chain's first), so an anchor taken out of the stream, or a
stream started over, shows as a gap. Version 1 (HMAC-SHA256) is gone: such a record is not an
anchor (it does not decode as one) and is reported untrusted.
"""

from __future__ import annotations

import hashlib

import msgspec

from common.contracts.base import Mode

TAG = "journal.anchor.v2"


class JournalAnchor(msgspec.Struct, tag=TAG, tag_field="type", kw_only=True, frozen=True):
    """The head of one tenant's and mode's hash chain (``ledger.core.chain``) at ``anchored_at``."""

    tenant_id: str
    mode: Mode
    seq: int
    head_hash: str
    anchored_at: str  # ISO 8601, UTC
    prev: str = ""  # hex sha256 of the signed text of the anchor this one extends; "" for the first
    kid: str = ""  # the id of the key that signed (SLUICE_JOURNAL_ANCHOR_KEY's kid)
    signature: str = ""  # base64 Ed25519 signature of signed_text()

    def signed_text(self) -> bytes:
        """What the signature covers: the type and every field but the signature, in order."""
        fields = [TAG, self.tenant_id, self.mode, str(self.seq), self.head_hash, self.anchored_at]
        return "|".join([*fields, self.prev, self.kid]).encode()

    def digest(self) -> str:
        """What the next anchor of the chain names as its ``prev``."""
        return hashlib.sha256(self.signed_text()).hexdigest()


ANCHORS: msgspec.json.Decoder[JournalAnchor] = msgspec.json.Decoder(JournalAnchor)

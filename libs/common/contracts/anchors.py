"""The journal's anchors (contract 14.3): a chain head published outside PostgreSQL.

The ledger publishes one :class:`JournalAnchor` to ``<prefix>.journal.anchors`` (kept forever,
never compacted) for each hash chain whose head moved, signed with HMAC-SHA256 under
``SLUICE_JOURNAL_ANCHOR_KEY``, a key the database never holds. ``signature`` is the hex
HMAC of :meth:`JournalAnchor.signed_text`; whoever can rewrite the database can neither take an
anchor back nor forge one.
"""

from __future__ import annotations

import msgspec

from common.contracts.base import Mode


class JournalAnchor(msgspec.Struct, tag="journal.anchor.v1", tag_field="type", kw_only=True, frozen=True):
    """The head of one tenant's and mode's hash chain (``ledger.chain``) at ``anchored_at``."""

    tenant_id: str
    mode: Mode
    seq: int
    head_hash: str
    anchored_at: str  # ISO 8601, UTC
    signature: str = ""  # hex HMAC-SHA256 of signed_text() under SLUICE_JOURNAL_ANCHOR_KEY

    def signed_text(self) -> bytes:
        """What the signature covers: the type and every field but the signature, in order."""
        fields = [
            "journal.anchor.v1",
            self.tenant_id,
            self.mode,
            str(self.seq),
            self.head_hash,
            self.anchored_at,
        ]
        return "|".join(fields).encode()


ANCHORS: msgspec.json.Decoder[JournalAnchor] = msgspec.json.Decoder(JournalAnchor)

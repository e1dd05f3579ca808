"""What the journal's anchors topic says, as pure logic (docs/security.md,
"Journal anchors, round 2"): the anchor keys (Ed25519, ``kid:base64``), and :class:`Found`, the
anchors of each chain read in topic order with what does not hold in them.

The anchors of one chain form a chain themselves (``JournalAnchor.prev``): each names the
digest of the anchor it extends, the chain's first names none. Reading the stream in order:

- a record that is not an anchor, or whose signature does not verify under a key of
  ``SLUICE_JOURNAL_ANCHOR_VERIFY_KEYS`` (an unknown ``kid`` included), is *untrusted*;
- an anchor whose ``prev`` names no anchor seen before it, or a second first anchor of a chain
  that has anchors, is a *gap*: anchors were taken out of the stream, or it was started over;
- an anchor that goes back from the one it extends (a lower entry, or the same entry with
  another hash) contradicts it: a *rewritten* anchor;
- two anchors extending the same one are a *fork*. Two ledger instances that anchor the same
  chain within the same instant both extend the newest anchor they saw: an honest fork, both
  anchors naming entries of one history. So a fork is recorded, and verify_journal compares
  every anchor of a chain with the database (``anchor_mismatch`` for a branch that lies); two
  anchors of one entry with different hashes are a finding on their own (``fork``).

The newest anchor of a chain (highest entry; the first of a tie) is the one a ledger instance
extends and the one ``truncated_tail`` and ``missing_head`` are told against.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from common.authority import AuthorityError, key_entries, public_entry
from common.contracts.anchors import ANCHORS, JournalAnchor

KEY_SETTING = "SLUICE_JOURNAL_ANCHOR_KEY"
VERIFY_SETTING = "SLUICE_JOURNAL_ANCHOR_VERIFY_KEYS"
ChainKey = tuple[str, str]  # (tenant_id, mode)


@dataclass(frozen=True)
class AnchorKey:
    """The ledger's anchor signing key (``kid:base64seed``); never logged, never published."""

    kid: str
    key: Ed25519PrivateKey

    @classmethod
    def parse(cls, setting: str) -> AnchorKey:
        entries = key_entries(setting, KEY_SETTING)
        if len(entries) != 1:
            raise AuthorityError(f"{KEY_SETTING} must be exactly one kid:base64 entry")
        kid, seed = entries[0]
        return cls(kid, Ed25519PrivateKey.from_private_bytes(seed))

    def sign(self, anchor: JournalAnchor) -> JournalAnchor:
        """``anchor`` with this key's id and its signature."""
        named = msgspec.structs.replace(anchor, kid=self.kid, signature="")
        sig = base64.b64encode(self.key.sign(named.signed_text())).decode()
        return msgspec.structs.replace(named, signature=sig)

    def public_entry(self) -> str:
        return public_entry(self.kid, self.key)


@dataclass(frozen=True)
class AnchorVerifyKeys:
    """Public keys by key id (``kid:base64,...``; several while the anchor key rotates)."""

    keys: Mapping[str, Ed25519PublicKey]

    @classmethod
    def parse(cls, setting: str) -> AnchorVerifyKeys:
        keys: dict[str, Ed25519PublicKey] = {}
        for kid, raw in key_entries(setting, VERIFY_SETTING):
            if kid in keys:
                raise AuthorityError(f"key id {kid!r} appears twice in {VERIFY_SETTING}")
            keys[kid] = Ed25519PublicKey.from_public_bytes(raw)
        return cls(keys)

    def verifies(self, anchor: JournalAnchor) -> bool:
        """Whether ``anchor`` is signed by the key its ``kid`` names, one of these."""
        known = self.keys.get(anchor.kid)
        if known is None:
            return False
        try:
            known.verify(base64.b64decode(anchor.signature, validate=True), anchor.signed_text())
        except (InvalidSignature, binascii.Error, ValueError):
            return False
        return True


@dataclass
class ChainAnchors:
    """The anchors of one chain, in topic order."""

    newest: JournalAnchor | None = None
    known: dict[str, tuple[int, str]] = field(default_factory=dict)  # digest: (seq, head hash)
    extended: set[str] = field(default_factory=set)  # digests some anchor names as its prev
    heads: dict[int, dict[str, str]] = field(default_factory=dict)  # seq: {head hash: first anchored_at}
    forks: int = 0


@dataclass
class Found:
    """What the anchors topic says (see the module docstring). ``lost`` names why the stream
    as a whole cannot be trusted to be whole (the topic gone, records deleted from its start)."""

    chains: dict[ChainKey, ChainAnchors] = field(default_factory=dict)
    untrusted: list[dict[str, Any]] = field(default_factory=list)
    broken: list[dict[str, Any]] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)

    @property
    def newest(self) -> dict[ChainKey, JournalAnchor]:
        return {k: c.newest for k, c in self.chains.items() if c.newest is not None}

    def compact(self) -> None:
        """Keep only what a publisher needs, the newest anchor of each chain (a long-running
        ledger would otherwise hold every anchor ever read; verify_journal reads afresh)."""
        for chain in self.chains.values():
            if chain.newest is not None:
                chain.known = {chain.newest.digest(): (chain.newest.seq, chain.newest.head_hash)}
            chain.extended, chain.heads = set(), {}
        self.untrusted, self.broken = [], []

    def add(self, value: bytes, keys: AnchorVerifyKeys, where: dict[str, Any]) -> JournalAnchor | None:
        """One record of the topic, in order: the anchor it is, if it is a trusted one."""
        try:
            anchor = ANCHORS.decode(value)
        except (msgspec.DecodeError, msgspec.ValidationError):
            self.untrusted.append({**where, "why": "not an anchor"})
            return None
        named = {"tenant_id": anchor.tenant_id, "mode": anchor.mode, "seq": anchor.seq}
        if not keys.verifies(anchor):
            self.untrusted.append({**where, **named, "why": "bad signature"})
            return None
        self.take(anchor, {**where, **named})
        return anchor

    def take(self, anchor: JournalAnchor, where: dict[str, Any]) -> None:
        """A trusted anchor, in order (also the publisher's own, before it is read back)."""
        chain = self.chains.setdefault((anchor.tenant_id, anchor.mode), ChainAnchors())
        digest = anchor.digest()
        if digest in chain.known:  # the same anchor again (read back after publishing it)
            return
        why = _break(chain, anchor)
        if why is None and anchor.head_hash not in chain.heads.get(anchor.seq, {anchor.head_hash: ""}):
            why = "fork"  # two anchors of one entry that disagree: one of them lies
        if why is not None:
            self.broken.append({**where, "why": why})
        if anchor.prev in chain.extended or (not anchor.prev and chain.known):
            chain.forks += 1
        if anchor.prev:
            chain.extended.add(anchor.prev)
        chain.known[digest] = (anchor.seq, anchor.head_hash)
        chain.heads.setdefault(anchor.seq, {}).setdefault(anchor.head_hash, anchor.anchored_at)
        if chain.newest is None or anchor.seq > chain.newest.seq:
            chain.newest = anchor


def _break(chain: ChainAnchors, anchor: JournalAnchor) -> str | None:
    if not anchor.prev:  # a chain's first anchor (a second one: two instances at once, a fork)
        return None
    before = chain.known.get(anchor.prev)
    if before is None:
        return "gap"
    seq, head_hash = before
    if anchor.seq < seq or (anchor.seq == seq and anchor.head_hash != head_hash):
        return "rewritten"
    return None


def newest_anchors(records: Iterable[tuple[int, int, bytes]], keys: AnchorVerifyKeys) -> Found:
    """:class:`Found` from ``(partition, offset, value)`` records in offset order."""
    found = Found()
    for partition, offset, value in records:
        found.add(value, keys, {"partition": partition, "offset": offset})
    return found

"""Authority between services: who decided a command travels with it, signed, so that no
single service or store can move money on its own (docs/security.md, "Round 5: no single
point of trust").

A command that moves money, or that only an operator may give, carries an
:class:`~common.contracts.base.Authority`: the signer (``compliance`` or ``admin``), the id of
its key, an expiry and an Ed25519 signature over the command. The service that applies the
command verifies it before it acts, with verification keys only (it can check a decision, never
make one). So a compromised gateway, or anyone else who can write a topic, cannot approve its
own transfer: whatever it forges does not verify, is dead-lettered with ``authority_invalid``,
counted, and changes nothing.

What is signed: the whole command except its ``authority`` and ``ctx.request_id`` (it only
correlates logs and traces), with the signer, key id and expiry in front. Every field that moves
money or says where it goes (amounts, currencies, parties, the decision's outcome), the command
id, the tenant, the mode and the reply address (``ctx.reply_to``: the answer goes only where the
signer sent it, ``common.replies``) are therefore covered. A stored decision answered to a
gateway waiting now is signed again with that gateway's address (compliance's ``readdressed``).
The bytes are msgspec's encoding of the command's struct, which both sides share from
``common.contracts``: a verifier that does not know a field the signer set re-encodes without
it, and refuses (fail closed).

Keys are settings of the form ``kid:base64``: a signing key is the 32-byte Ed25519 private
seed, a verification key the 32-byte public key. A key id starts with its signer's name
(``compliance-2026a``, ``admin-1``), so a verifier knows whose key it holds and admin's key can
never stand in for a compliance decision. Several verification keys may be given
(comma-separated): a new key is added to every verifier first, then the signer switches, then
the old key is dropped.

Replay: the command id is signed, and the ledger applies a command id once (its inbox); a copy
of an applied command answers the stored result and moves nothing. The expiry bounds how long a
captured command stays usable at all.

The ledger signs, the same way and with a key of its own (``ledger-...``), what it publishes
that others act on (docs/security.md, "Who writes each topic"): the allowance it gives back
(``compliance.releases``) and every record of the events topic (one event, or one fact's
``EventBatch``), which compliance gives cap back on and webhooks stores and delivers. Their
readers verify before acting; a forgery is dead-lettered ``authority_invalid`` and counted like
a forged command. Replay is as harmless: a release is named after the command whose hold it
gives back, once; an event id is stored once; and :data:`RECORD_TTL_S` bounds the rest.
"""

from __future__ import annotations

import base64
import binascii
import re
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Literal, TypeVar

import msgspec
import nacl.exceptions
import nacl.signing
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from common.contracts.base import Authority, Envelope, ErrorBody, Event, Result, encode
from common.contracts.events import EventBatch
from common.errors import ErrorCode
from common.keyring import key_entries as split_key_entries
from common.metrics import AUTHORITY_REFUSED

Signer = Literal["compliance", "admin", "ledger"]
SIGNERS: tuple[Signer, ...] = ("compliance", "admin", "ledger")
DOMAIN = b"sluice-authority-v2\x00"  # v2: the reply address is covered
REASON = "authority_invalid"
_KID = re.compile(r"^(compliance|admin|ledger)[-_.][A-Za-z0-9_.-]{1,40}$")

#: What the ledger signs that others act on: the allowance it gives back, and the events a
#: partner receives and compliance gives cap back on. An event is no command (it has no ctx).
Record = Envelope | Event | EventBatch
R = TypeVar("R", bound=Record)

#: Whose signature a reader believes, by what it reads: compliance gives cap back only on the
#: ledger's word (a release, a failed or rejected update); webhooks stores and delivers an
#: event the ledger published, or one admin published itself (docs/security.md, "Who writes
#: each topic").
RELEASE_SIGNERS: tuple[Signer, ...] = ("ledger",)
USAGE_SIGNERS: tuple[Signer, ...] = ("ledger",)
EVENT_SIGNERS: tuple[Signer, ...] = ("ledger", "admin")

#: How long the ledger's signature on a release or an event stays good: as long as the suite's
#: topics keep a record (7 days, ``kafka_retention_ms``; a redrive needs its origin still on
#: the topic anyway), and well under webhooks' 30 days of stored events, so a captured event
#: replayed later is either stored already (an event id is stored once) or expired.
RECORD_TTL_S = 7 * 86400


class AuthorityError(ValueError):
    """A malformed key setting (the message never echoes key material)."""


class AuthorityInvalid(Exception):
    """A command whose authority does not verify: refused, dead-lettered, never applied."""

    reason = REASON

    def __init__(self, why: str, detail: str) -> None:
        super().__init__(f"{REASON}: {why}: {detail}")
        self.why = why


def _signer_of(kid: str) -> Signer:
    if not _KID.match(kid):
        raise AuthorityError(
            f"key id {kid[:40]!r} must start with compliance-, admin- or ledger- (its signer),"
            " then 1-40 of A-Z a-z 0-9 _ . -"
        )
    name = re.split(r"[-_.]", kid, maxsplit=1)[0]
    for signer in SIGNERS:
        if name == signer:
            return signer
    raise AuthorityError(f"key id {kid[:40]!r} names no signer")  # unreachable: _KID


_ANY_KID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,47}$")


def check_kid(kid: str) -> None:
    """A key id any Ed25519 key setting may use: 1-48 of A-Z a-z 0-9 _ . -, not starting
    with a separator (the journal's anchor keys; the deciders' ids are narrower)."""
    if not _ANY_KID.match(kid):
        raise AuthorityError(
            f"key id {kid[:40]!r} must be 1-48 of A-Z a-z 0-9 _ . - (a letter or digit first)"
        )


def key_entries(
    setting: str, what: str, kid_check: Callable[[str], object] = check_kid
) -> list[tuple[str, bytes]]:
    """The ``kid:base64`` entries of a comma-separated Ed25519 key setting, each 32 bytes (a
    private seed or a public key), each id passed to ``kid_check``. Raises
    :class:`AuthorityError` naming ``what`` (never echoing key material)."""
    out = split_key_entries(setting, what, AuthorityError)
    for kid, raw in out:
        if len(raw) != 32:
            raise AuthorityError(f"key {kid[:40]!r} of {what} must be 32 bytes (Ed25519)")
        kid_check(kid)
    return out


def _entries(setting: str, what: str) -> list[tuple[str, bytes]]:
    return key_entries(setting, what, _signer_of)


def public_entry(kid: str, key: Ed25519PrivateKey) -> str:
    """The verification entry ``kid:base64`` of ``key``'s public key (not a secret)."""
    raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return f"{kid}:{base64.b64encode(raw).decode()}"


def new_seed_setting(kid: str) -> str:
    """A fresh Ed25519 signing key setting ``kid:base64seed``."""
    seed = Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )
    return f"{kid}:{base64.b64encode(seed).decode()}"


def signed_bytes(record: Record, signer: str, kid: str, expires_at: int) -> bytes:
    """What the signature covers (see the module's docstring): a command but its request id,
    an event or a batch of events whole (its type tag included, so no signed record can be
    read as another kind)."""
    bare: msgspec.Struct
    if isinstance(record, Envelope):
        ctx = msgspec.structs.replace(record.ctx, request_id="")
        bare = msgspec.structs.replace(record, authority=None, ctx=ctx)
    else:
        bare = msgspec.structs.replace(record, authority=None)
    head = f"{signer}\x00{kid}\x00{expires_at}\x00".encode()
    return DOMAIN + head + encode(bare)


@dataclass(frozen=True)
class SigningKey:
    """A signer's private key (compliance's, admin's or the ledger's), used by that service
    alone."""

    kid: str
    signer: Signer
    key: Ed25519PrivateKey
    ttl_s: int = 900
    # The same seed in libsodium (PyNaCl), which signs; ``key`` (OpenSSL, through
    # cryptography) gives the public entry. libsodium's Ed25519 takes about two thirds of
    # OpenSSL 3.0's time to verify (tools.bench.signatures), and every record is verified.
    sodium: nacl.signing.SigningKey = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sodium", nacl.signing.SigningKey(self.key.private_bytes_raw()))

    @classmethod
    def parse(cls, setting: str, signer: Signer, ttl_s: int | None = None) -> SigningKey:
        """From ``kid:base64seed`` (one key: the one that signs). Unless ``ttl_s`` says
        otherwise, a command stays good for 900 s, the ledger's records for
        :data:`RECORD_TTL_S`."""
        entries = _entries(setting, f"the {signer} signing key")
        if len(entries) != 1:
            raise AuthorityError(f"the {signer} signing key must be exactly one kid:base64 entry")
        kid, seed = entries[0]
        if _signer_of(kid) != signer:
            raise AuthorityError(f"key id {kid!r} does not name {signer} as its signer")
        if ttl_s is None:
            ttl_s = RECORD_TTL_S if signer == "ledger" else 900
        return cls(kid, signer, Ed25519PrivateKey.from_private_bytes(seed), ttl_s)

    def sign(self, cmd: R, now: float | None = None) -> R:
        """``cmd`` (a command, an event or a batch of events) with this signer's authority,
        valid for ``ttl_s`` from ``now``."""
        expires_at = int(now if now is not None else time.time()) + self.ttl_s
        message = signed_bytes(cmd, self.signer, self.kid, expires_at)
        sig = self.sodium.sign(message).signature
        grant = Authority(
            signer=self.signer,
            kid=self.kid,
            expires_at=expires_at,
            sig=base64.urlsafe_b64encode(sig).decode(),
        )
        return msgspec.structs.replace(cmd, authority=grant)

    def public_setting(self) -> str:
        """This key's verification entry, ``kid:base64`` of the public key."""
        return public_entry(self.kid, self.key)


@dataclass(frozen=True)
class VerifyKeys:
    """Verification keys by key id, each bound to its signer by the id's prefix."""

    keys: Mapping[str, tuple[Signer, nacl.signing.VerifyKey]]

    @classmethod
    def parse(cls, setting: str) -> VerifyKeys:
        keys: dict[str, tuple[Signer, nacl.signing.VerifyKey]] = {}
        for kid, raw in _entries(setting, "SLUICE_AUTHORITY_VERIFY_KEYS"):
            if kid in keys:
                raise AuthorityError(f"key id {kid!r} appears twice in SLUICE_AUTHORITY_VERIFY_KEYS")
            keys[kid] = (_signer_of(kid), nacl.signing.VerifyKey(raw))
        return cls(keys)

    def signers(self) -> set[Signer]:
        return {signer for signer, _ in self.keys.values()}

    def verify(self, cmd: Record, allowed: Collection[str], now: float | None = None) -> Signer:
        """The signer of ``cmd``, one of ``allowed``; raises :class:`AuthorityInvalid` (naming
        why) when the command is unsigned, signed by another, with an unknown key, expired,
        or its signature does not verify over the command as it is."""
        grant = cmd.authority
        if grant is None:
            raise AuthorityInvalid("unsigned", f"{type(cmd).__name__} carries no authority")
        if grant.signer not in allowed:
            raise AuthorityInvalid("wrong_signer", f"{type(cmd).__name__} is not {grant.signer}'s to give")
        known = self.keys.get(grant.kid)
        if known is None or known[0] != grant.signer:
            raise AuthorityInvalid("unknown_key", f"no {grant.signer} key {grant.kid[:40]!r}")
        if (now if now is not None else time.time()) > grant.expires_at:
            raise AuthorityInvalid("expired", f"expired at {grant.expires_at}")
        try:
            sig = base64.urlsafe_b64decode(grant.sig.encode())
            known[1].verify(signed_bytes(cmd, grant.signer, grant.kid, grant.expires_at), sig)
        except (nacl.exceptions.BadSignatureError, binascii.Error, ValueError):
            raise AuthorityInvalid(
                "bad_signature", f"{type(cmd).__name__} does not match its signature"
            ) from None
        return grant.signer


def refusal(cmd: Envelope, exc: AuthorityInvalid, service: str) -> Result:
    """The answer to a refused command's reply address: 403, ``details.reason``
    ``authority_invalid`` and why (the ledger's and compliance's alike)."""
    return Result(
        command_id=cmd.command_id,
        request_id=cmd.ctx.request_id,
        status=403,
        error=ErrorBody(
            code=ErrorCode.FORBIDDEN,
            message=f"the command's authority did not verify, so {service} did not act on it",
            details={"reason": REASON, "why": exc.why},
        ),
    )


def admit(service: str, keys: VerifyKeys, required: Callable[[R], Collection[str]]) -> Callable[[R], None]:
    """A consumer's admission check (``common.consume.BatchProcessor(admit=...)``): a command
    (or a release, or an event) is admitted when its authority verifies for a signer
    ``required`` names for it (an empty collection: no authority needed). A refusal is counted
    by service and why."""

    def check(cmd: R) -> None:
        allowed = required(cmd)
        if not allowed:
            return
        try:
            keys.verify(cmd, allowed)
        except AuthorityInvalid as exc:
            AUTHORITY_REFUSED.labels(service, exc.why).inc()
            raise

    return check


def new_signing_setting(signer: Signer, label: str = "1") -> str:
    """A fresh signing key setting (``make run``, the tests): ``<signer>-<label>:base64seed``."""
    return new_seed_setting(f"{signer}-{label}")


def verify_setting(*signing_settings: str) -> str:
    """The verification keys setting for the given signing key settings."""
    out = []
    for setting in signing_settings:
        kid = setting.partition(":")[0]
        out.append(SigningKey.parse(setting, _signer_of(kid)).public_setting())
    return ",".join(out)


def new_settings(label: str = "1") -> dict[str, str]:
    """Fresh signing keys for compliance, admin and the ledger (three keys, none derived from
    another), and the verification keys for all three, as the environment gives them
    (``make run``, the tests, bench and chaos)."""
    compliance, admin = new_signing_setting("compliance", label), new_signing_setting("admin", label)
    ledger = new_signing_setting("ledger", label)
    return {
        "SLUICE_COMPLIANCE_SIGNING_KEY": compliance,
        "SLUICE_ADMIN_SIGNING_KEY": admin,
        "SLUICE_LEDGER_SIGNING_KEY": ledger,
        "SLUICE_AUTHORITY_VERIFY_KEYS": verify_setting(compliance, admin, ledger),
    }


def public_settings_of(signing_setting: str) -> str:
    """The verification entries (``kid:base64`` public keys) of a ``kid:base64seed`` setting."""
    entries = key_entries(signing_setting, "a signing key")
    return ",".join(public_entry(kid, Ed25519PrivateKey.from_private_bytes(seed)) for kid, seed in entries)


def new_anchor_settings(label: str = "1") -> dict[str, str]:
    """A fresh journal anchor key (the ledger's alone) and its verification key, as the
    environment gives them (``make run``, the tests, bench and chaos)."""
    key = new_seed_setting(f"anchor-{label}")
    return {"SLUICE_JOURNAL_ANCHOR_KEY": key, "SLUICE_JOURNAL_ANCHOR_VERIFY_KEYS": public_settings_of(key)}

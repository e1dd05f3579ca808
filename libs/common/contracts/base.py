"""Envelope pieces every message shares.

Every command carries a :class:`Ctx` (request id, tenant, mode, reply address) and a
``command_id`` that is unique per logical operation (the inbox key). Results travel back to
``ctx.reply_to`` correlated by ``command_id``; the request id travels in every message.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict, TypeVar

import msgspec

Mode = Literal["sandbox", "production"]


class Owner(TypedDict):
    tenant_id: str
    mode: Mode


def as_mode(value: str) -> Mode:
    """A stored or authenticated mode as the contracts' type; anything else is a bug."""
    if value == "sandbox":
        return "sandbox"
    if value == "production":
        return "production"
    raise ValueError(f"not a mode: {value!r}")


class Ctx(msgspec.Struct, frozen=True, kw_only=True):
    request_id: str
    tenant_id: str
    mode: Mode
    live_enabled: bool = False
    reply_to: str | None = None
    idempotency_key: str | None = None
    actor: str | None = None  # operator token name for admin commands

    @property
    def owner(self) -> Owner:
        """The tenant and mode a row this command creates belongs to, as the row's columns:
        ``Wallet(**cmd.ctx.owner, id=...)``. Spelled once, so no service writes a command's
        row under a tenant or mode the command did not come from."""
        return {"tenant_id": self.tenant_id, "mode": self.mode}


class Decision(msgspec.Struct, frozen=True, kw_only=True):
    """Compliance stamp on a forwarded command."""

    decision_id: str
    outcome: Literal["allow", "review"]
    rule: str


class Authority(msgspec.Struct, frozen=True, kw_only=True):
    """Who decided a command (or published a release or an event), signed
    (``common.authority``): the signer, its key id, when the grant expires (Unix seconds) and
    the Ed25519 signature (base64url)."""

    signer: Literal["compliance", "admin", "ledger"]
    kid: str
    expires_at: int
    sig: str


class Envelope(msgspec.Struct, tag_field="type", kw_only=True):
    """What every command carries: its id (the inbox key), its context and, for a command
    that moves money or that only an operator may give, its signed authority."""

    command_id: str
    ctx: Ctx
    authority: Authority | None = None


class Command(Envelope, kw_only=True):
    """A command compliance may stamp with its decision before the ledger applies it."""

    decision: Decision | None = None


class ErrorBody(msgspec.Struct, kw_only=True):
    code: str
    message: str
    details: dict[str, Any] = msgspec.field(default_factory=dict)


class Result(msgspec.Struct, tag="result.v1", tag_field="type", kw_only=True):
    """The answer to a command: an HTTP status and either data or an error."""

    command_id: str
    request_id: str
    status: int
    data: Any = None
    error: ErrorBody | None = None
    # Secrets for the caller, apart from ``data`` (partner text in ``data`` is never taken for
    # ciphertext: docs/security.md, "Round 4"): field name -> ciphertext sealed for this reply
    # (``common.keyring.seal_for_reply``). The gateway opens only the names listed in
    # ``common.keyring.REPLY_SECRET_FIELDS`` and puts them into ``data``.
    sealed: dict[str, bytes] | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


class Event(msgspec.Struct, tag_field="type", kw_only=True):
    event_id: str
    tenant_id: str
    mode: Mode
    created_at: str
    request_id: str | None = None
    # The publisher's signature when the event is a record of its own (``common.authority``);
    # the events of an ``EventBatch`` are covered by the batch's. Never shown to a partner.
    authority: Authority | None = None


T = TypeVar("T")

_encoder = msgspec.json.Encoder(decimal_format="string")


def encode(msg: msgspec.Struct) -> bytes:
    return _encoder.encode(msg)


def decode(raw: bytes, type: type[T]) -> T:  # noqa: A002 - mirrors msgspec
    return msgspec.json.decode(raw, type=type)

"""Where a consumer may send its answer: only to a caller's reply topic (docs/security.md,
"Transfer ids, live and replies").

A command names its reply address in ``ctx.reply_to``. The ledger, compliance and webhooks
hold WRITE on every ``<prefix>.replies.`` topic, and the ledger also on the journal's anchors
topic (it publishes the anchors), so an address taken as given would let whoever writes a
command (the gateway writes compliance's commands and the ledger's reads) make a responder
publish a result on a topic it must not write: on the anchors topic, kept forever, a result
record turns verify_journal's answer into ``anchor_signature_invalid`` for good.

Two checks, one rule (:func:`allowed`: a name under ``<prefix>.replies.``, legal for Kafka):

- at admission (:func:`admit`, ``common.consume.BatchProcessor(admit=...)``): a command whose
  reply address breaks the rule is refused before it is handled, as a command whose authority
  does not verify is (``authority_invalid``, why ``reply_to``): dead-lettered, never redriven,
  counted in ``sluice_authority_refused_total{why="reply_to"}``, answered nowhere;
- where a reply is published (:func:`address`): an address that breaks the rule is dropped,
  counted in ``sluice_replies_refused_total`` and logged, so no code path can reach another
  topic by way of an answer.

A command signed by its decider carries its reply address inside the signature
(``common.authority.signed_bytes``), so a signed command's answer goes where the signer sent
it. An unsigned one (a partner's command on compliance's topic, a read on the ledger's) can
name any reply topic of any caller: what it can reach is a reply topic, never a topic a
service consumes, nor the anchors.

The anchors topic is written by the anchor publisher alone: ``common.tracing.publish`` refuses
it unless the caller says it publishes anchors (``ledger.app`` does, for ``ledger.anchors``).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

from common.authority import AuthorityInvalid
from common.contracts.base import Envelope
from common.metrics import AUTHORITY_REFUSED, REPLIES_REFUSED

log = logging.getLogger(__name__)

#: Kafka's legal topic names (at most 249 of these characters).
_LEGAL = re.compile(r"^[A-Za-z0-9._-]{1,249}$")
WHY = "reply_to"


def allowed(prefix: str, reply_to: str) -> bool:
    """Whether ``reply_to`` names a reply topic of the deployment under ``prefix``."""
    base = f"{prefix}.replies."
    return bool(_LEGAL.match(reply_to)) and reply_to.startswith(base) and len(reply_to) > len(base)


def admit(service: str, prefix: str) -> Callable[[Envelope], None]:
    """The admission check of a consumer that answers: a reply address, if any, must be a reply
    topic (:func:`allowed`); anything else is refused as ``authority_invalid``, why
    ``reply_to``, and counted."""

    def check(cmd: Envelope) -> None:
        reply_to = cmd.ctx.reply_to
        if reply_to is None or allowed(prefix, reply_to):
            return
        AUTHORITY_REFUSED.labels(service, WHY).inc()
        raise AuthorityInvalid(WHY, f"{type(cmd).__name__} names {reply_to[:80]!r}, not a reply topic")

    return check


def both(*checks: Callable[[Envelope], None]) -> Callable[[Envelope], None]:
    """Admission checks run in order; the first refusal refuses."""

    def check(cmd: Envelope) -> None:
        for one in checks:
            one(cmd)

    return check


def address(service: str, prefix: str, reply_to: str | None) -> str | None:
    """``reply_to`` when an answer may be published there; None (nothing published) when there
    is none or it breaks the rule, which is then counted and logged."""
    if reply_to is None or reply_to == "":
        return None
    if allowed(prefix, reply_to):
        return reply_to
    REPLIES_REFUSED.labels(service).inc()
    log.warning("%s: a reply to %r was not published: not a reply topic", service, reply_to[:80])
    return None

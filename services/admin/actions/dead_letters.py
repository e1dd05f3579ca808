"""Dead letters operators can act on (docs/failure-model.md, "Dead letters").

Every service's consumer runtime publishes a message it gave up on to ``<prefix>.dlq`` with
its original topic, partition, offset, error and attempt count. Admin keeps them
(``identity.dead_letters``, one row per ``dead_letter_id``) so that operators can list them
and redrive them to their original topic: ``redrive_dead_letters`` marks each redriven in
the same transaction that stages the re-publication (identity outbox), so redriving twice
has one effect, and the services' inboxes make a redriven command harmless if it had
already been carried out.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import msgspec
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from admin import repository as repo
from admin import schemas
from admin.actions import origins
from admin.context import ActionContext
from common.broker import DeadLetter
from common.consume import BatchProcessor, Failure
from common.errors import invalid
from common.health import Readiness
from common.outbox import OutMessage
from common.paging import page, seq_cursor
from common.validation import decode_body
from common.views import columns

log = logging.getLogger(__name__)

REDRIVE_LIMIT = 1000  # per call; ``remaining`` says when to call again


class _Tagged(msgspec.Struct):
    type: str | None = None


def _command_type(payload: bytes) -> str | None:
    try:
        return msgspec.json.decode(payload, type=_Tagged).type
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


def view(row: Any) -> dict[str, Any]:
    """What an operator sees; the payload itself stays inside (it may carry personal data)."""
    shown = columns(row, "dead_letter_id", "service", "topic", "partition", "offset", "error", "attempts")
    return shown | {
        "request_id": row.request_id,
        "message_type": _command_type(bytes(row.payload)),
        "payload_bytes": len(row.payload),
        **columns(row, "dead_lettered_at", "redriven_at"),
        "redrive_refused": row.redrive_refused,
    }


async def list_dead_letters(ctx: ActionContext, raw: bytes) -> dict[str, Any]:
    p = decode_body(raw, schemas.ListDeadLetters)
    after = seq_cursor(p.after, "list_dead_letters")
    rows = await repo.list_dead_letters(ctx.session, p.limit, after, p.service)
    return page(rows, p.limit, view, cursor=lambda r: r.seq)


async def redrive_dead_letters(ctx: ActionContext, raw: bytes) -> dict[str, Any]:
    """Redrive dead letters to where they came from, each only if its origin verifies
    (admin.actions.origins); the others are marked refused with their reason, never sent."""
    p = decode_body(raw, schemas.RedriveDeadLetters)
    if (p.dead_letter_ids is None) == (not p.all):
        raise invalid("dead_letter_ids", "give dead_letter_ids, or all: true (not both)")
    rows = await repo.take_for_redrive(ctx.session, p.dead_letter_ids, REDRIVE_LIMIT)
    refused = await origins.refusals(ctx.settings, rows)
    sent = [r for r in rows if r.seq not in refused]
    await repo.settle_redrive(ctx.session, ctx.actor, [r.seq for r in sent], refused)
    for r in sent:  # published after commit, in the order they were dead-lettered
        ctx.outbox.add(ctx.session, OutMessage(r.topic, bytes(r.payload), key=r.key and bytes(r.key)))
    ctx.target = ",".join(r.dead_letter_id for r in rows[:20]) or None
    by_seq = {r.seq: r.dead_letter_id for r in rows}
    ctx.details = {"redriven": len(sent), "refused": len(refused), "all": p.all}
    return {
        "redriven": [r.dead_letter_id for r in sent],
        "refused": [{"dead_letter_id": by_seq[seq], "reason": reason} for seq, reason in refused.items()],
        "remaining": len(rows) == REDRIVE_LIMIT,
    }


def processor(sessions: async_sessionmaker[AsyncSession], readiness: Readiness) -> BatchProcessor[DeadLetter]:
    """The consumer of ``<prefix>.dlq``: keeps each dead letter in ``identity.dead_letters``."""

    async def keep(letters: Sequence[DeadLetter]) -> None:
        rows = [
            {
                **{f: getattr(d, f) for f in DeadLetter.__struct_fields__ if f != "dead_lettered_at"},
                "dead_lettered_at": datetime.fromisoformat(d.dead_lettered_at),
            }
            for d in letters
        ]
        async with sessions() as session, session.begin():
            await repo.record_dead_letters(session, rows)

    async def unreadable(failure: Failure) -> None:  # never back onto the DLQ: no loop
        log.error("unreadable dead letter at offset %d: %r", failure.record.offset, failure.error)

    return BatchProcessor(
        name="admin-dead-letters",
        decode=lambda raw: msgspec.json.decode(raw, type=DeadLetter),
        handle_batch=keep,
        dead_letter=unreadable,
        readiness=readiness,
    )

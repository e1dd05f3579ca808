"""A dead letter's origin, checked before admin redrives it (docs/security.md, "Round 5: no
single point of trust").

Anyone who can write the dead-letter topic could otherwise make admin publish whatever they
like, with admin's own rights, to any topic (a confused deputy): a made-up event would reach a
partner signed. So admin redrives a letter only when

- it is not a refusal that must never be redriven (``authority_invalid``: a forgery stays
  refused);
- its topic is one the service that gave up on it consumes (``common.acls.CONSUMERS``): a
  redrive goes back to that service, nowhere else;
- the record at its topic, partition and offset, read back from the broker, is the letter's
  key and payload byte for byte: a letter can only send back what really was on that topic.

A letter whose origin is past the topic's retention can no longer be checked, and is refused
(``origin_missing``): a partner's retry with the same Idempotency-Key is the way back then.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import KafkaError

from common import kafka
from common.acls import CONSUMERS
from common.authority import REASON
from common.metrics import REDRIVE_REFUSED
from common.settings import Settings
from common.topics import Topic, Topics

log = logging.getLogger(__name__)
FETCH_TIMEOUT_MS = 5000


def consumed_by(prefix: str) -> dict[str, set[str]]:
    """Each shared topic's full name, and the services that consume it."""
    t = Topics(prefix)
    return {t[topic]: set(CONSUMERS.get(topic, {})) for topic in Topic if topic != Topic.DEAD_LETTERS}


def static_refusal(letter: Any, readers: dict[str, set[str]]) -> str | None:
    """Why ``letter`` may not be redriven whatever the broker holds, or None."""
    if REASON in (letter.error or ""):
        return "never_redriven"
    if letter.service not in readers.get(letter.topic, set()):
        return "wrong_topic"
    return None


async def refusals(settings: Settings, letters: Sequence[Any]) -> dict[int, str]:
    """For each letter (a ``identity.dead_letters`` row) that may not be redriven, its reason,
    by ``seq``; a letter not named may be redriven."""
    readers = consumed_by(settings.topic_prefix)
    out: dict[int, str] = {}
    to_read = []
    for letter in letters:
        reason = static_refusal(letter, readers)
        if reason is None:
            to_read.append(letter)
        else:
            out[letter.seq] = reason
    if to_read:
        consumer = AIOKafkaConsumer(**kafka.client_args(settings), enable_auto_commit=False, group_id=None)
        await consumer.start()
        try:
            for letter in to_read:
                reason = await _origin_refusal(consumer, letter)
                if reason is not None:
                    out[letter.seq] = reason
        finally:
            await consumer.stop()
    for seq, reason in out.items():
        REDRIVE_REFUSED.labels(reason).inc()
        log.warning("refused to redrive dead letter %s: %s", seq, reason)
    return out


async def _origin_refusal(consumer: AIOKafkaConsumer, letter: Any) -> str | None:
    tp = TopicPartition(letter.topic, letter.partition)
    try:
        consumer.assign([tp])
        first = (await consumer.beginning_offsets([tp]))[tp]
        end = (await consumer.end_offsets([tp]))[tp]
        if not first <= letter.offset < end:
            return "origin_missing"
        consumer.seek(tp, letter.offset)
        records = (await consumer.getmany(tp, timeout_ms=FETCH_TIMEOUT_MS, max_records=1)).get(tp, [])
    except (KafkaError, ValueError, AssertionError) as exc:
        log.warning("could not read the origin of a dead letter: %r", exc)
        return "origin_missing"
    if not records or records[0].offset != letter.offset:
        return "origin_missing"
    rec = records[0]
    key = bytes(letter.key) if letter.key is not None else None
    if rec.value != bytes(letter.payload) or rec.key != key:
        return "origin_mismatch"
    return None

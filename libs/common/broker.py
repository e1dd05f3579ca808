"""Kafka wiring: the broker, consumer settings, topics, and dead letters.

One place produces the arguments for FastStream subscribers so every consumer commits
after its work is durable (``AckPolicy.ACK``) and uses the fetch settings Tansu needs.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

import msgspec
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError
from faststream import AckPolicy
from faststream.kafka import KafkaBroker

from common.settings import Settings
from common.topics import Topics

log = logging.getLogger(__name__)


def create_broker(settings: Settings, client_id: str) -> KafkaBroker:
    return KafkaBroker(
        settings.kafka_bootstrap,
        client_id=client_id,
        enable_idempotence=False,
        acks=1,
        linger_ms=0,
        request_timeout_ms=15000,
        logger=logging.getLogger("faststream"),
        log_level=logging.DEBUG,
    )


async def raw_body(msg: Any) -> Any:
    """Hand handlers the raw bytes (a list for batches); contracts are decoded with msgspec."""
    return msg.body


def consumer_options(
    settings: Settings, group_id: str, *, batch: bool = True, background: bool = False
) -> dict[str, Any]:
    """Keyword arguments for ``broker.subscriber``: at-least-once, batched, tuned fetches.

    ``background`` consumers (not on a request's path) wait longer per fetch and per idle
    batch: Tansu answers a fetch only when its wait expires, so a short wait is a busy poll.
    """
    wait_ms = settings.kafka_background_fetch_max_wait_ms if background else settings.kafka_fetch_max_wait_ms
    opts: dict[str, Any] = {
        "group_id": group_id,
        "ack_policy": AckPolicy.ACK,
        "auto_offset_reset": "earliest",
        "fetch_max_wait_ms": wait_ms,
        "session_timeout_ms": settings.kafka_session_timeout_ms,
        "heartbeat_interval_ms": settings.kafka_heartbeat_interval_ms,
        "decoder": raw_body,
    }
    if batch:
        opts.update(
            batch=True,
            max_records=settings.kafka_max_records,
            batch_timeout_ms=wait_ms if background else settings.kafka_batch_timeout_ms,
        )
    return opts


async def ensure_topics(settings: Settings, names: Iterable[str], partitions: int | None = None) -> None:
    """Create topics if missing (Apache Kafka may have auto-creation disabled)."""
    admin = AIOKafkaAdminClient(bootstrap_servers=settings.kafka_bootstrap)
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        missing = [n for n in names if n not in existing]
        if missing:
            try:
                await admin.create_topics(
                    [NewTopic(n, partitions or settings.kafka_topic_partitions, 1) for n in missing]
                )
            except TopicAlreadyExistsError:
                pass
    finally:
        await admin.close()


def service_topics(settings: Settings) -> list[str]:
    t = Topics(settings.topic_prefix)
    return [
        t.compliance_commands,
        t.ledger_commands,
        t.webhooks_commands,
        t.events,
        t.control_events,
        t.dead_letters,
    ]


class DeadLetter(msgspec.Struct, tag="dead_letter.v1", tag_field="type", kw_only=True):
    service: str
    topic: str
    error: str
    attempts: int
    request_id: str | None = None
    payload: str  # original bytes, decoded as UTF-8 with replacement


async def dead_letter(
    broker: KafkaBroker,
    settings: Settings,
    *,
    service: str,
    topic: str,
    raw: bytes,
    error: BaseException | str,
    attempts: int,
    request_id: str | None = None,
) -> None:
    msg = DeadLetter(
        service=service,
        topic=topic,
        error=repr(error)[:2000],
        attempts=attempts,
        request_id=request_id,
        payload=raw.decode("utf-8", "replace"),
    )
    log.error(
        "dead-lettered a message from %s after %d attempts: %s",
        topic,
        attempts,
        msg.error,
        extra={"request_id": request_id},
    )
    await broker.publish(msgspec.json.encode(msg), topic=Topics(settings.topic_prefix).dead_letters)

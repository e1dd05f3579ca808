"""``python -m sluice topics``: create or check every topic of the suite, for clusters that
forbid auto-creation. Idempotent: a topic that exists is left as it is, and one whose partition
count differs from ``SLUICE_KAFKA_TOPIC_PARTITIONS`` is reported (partitions bound how many
instances of a consumer share the work; changing them moves keys between partitions, so it is an
operator's decision, never done here). Replication factor (``SLUICE_KAFKA_REPLICATION_FACTOR``)
and retention (``SLUICE_KAFKA_RETENTION_MS``) apply to the topics it creates. Reply topics are
each gateway's and admin's own: they create them at start.
"""

from __future__ import annotations

from typing import Any

from aiokafka.admin import AIOKafkaAdminClient
from tenacity import AsyncRetrying, retry_if_result, stop_after_delay, wait_fixed

from common import kafka
from common.broker import create_missing, service_topics
from common.settings import Settings


async def provision(settings: Settings) -> tuple[int, list[str]]:
    """(exit status, one line per topic): 0 when every topic exists with the configured
    partition count, 1 when one differs."""
    lines, status = [], 0
    want = settings.kafka_topic_partitions
    names = service_topics(settings)
    async with kafka.admin_client(**kafka.client_args(settings)) as admin:
        # a broker that is down is asked no more: another is (common.kafka.admin_retry)
        missing = await kafka.admin_retry(lambda: create_missing(admin, settings, names, None))
        found = await _partitions(admin, names, missing)
    for n in names:
        have = found.get(n, 0)
        if have != want:
            status = 1
            lines.append(f"{n}: {have} partitions, {want} configured (SLUICE_KAFKA_TOPIC_PARTITIONS)")
        else:
            lines.append(f"{n}: {'created' if n in missing else 'ok'}, {have} partitions")
    return status, lines


async def _partitions(admin: AIOKafkaAdminClient, names: list[str], created: list[str]) -> dict[str, int]:
    """Each topic's partition count. A topic just created reaches the broker's metadata a
    moment after the controller answered (0 partitions, seen in CI): those are asked again for
    up to 10 s; a topic that existed before is reported as it is, and after 10 s so is the
    last answer (an error of the request is raised at once)."""

    async def read() -> dict[str, int]:
        described: list[dict[str, Any]] = await admin.describe_topics(names)
        return {d["topic"]: len(d.get("partitions", [])) for d in described}

    def unsettled(found: dict[str, int]) -> bool:
        return any(found.get(n, 0) == 0 for n in created)

    retrying = AsyncRetrying(
        retry=retry_if_result(unsettled),
        stop=stop_after_delay(10),
        wait=wait_fixed(0.2),
        retry_error_callback=lambda state: state.outcome.result() if state.outcome else {},
    )
    found: dict[str, int] = await retrying(read)
    return found

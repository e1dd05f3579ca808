"""The gateways' control-event reader (gateway.control) against the real broker and
Redis: a gateway that starts after admin published a revocation still evicts the revoked key's
cached entry (it re-reads the last cache TTL's events on start), and one published while it
runs is honoured within seconds. Without the look-back the first half fails: the event came
before the reader and a stale entry would answer for up to 300 s."""

from __future__ import annotations

import asyncio
import secrets
import time

import msgspec
import pytest
from redis.asyncio import Redis

from common.auth import generation_name, hash_api_key, key_cache_name
from common.broker import create_broker, ensure_topics
from common.contracts.events import ControlEvent
from common.settings import Settings
from common.topics import Topics
from gateway.control import ControlReader, processor
from tests.conftest import Stack

pytestmark = pytest.mark.integration


async def _gone(redis: Redis, name: str, timeout: float = 15.0) -> float:
    started = time.monotonic()
    while await redis.get(name) is not None:
        assert time.monotonic() - started < timeout, f"{name} still cached after {timeout} s"
        await asyncio.sleep(0.1)
    return time.monotonic() - started


async def test_a_gateway_started_after_a_revocation_still_evicts_the_stale_entry(stack: Stack) -> None:
    # A topic of its own: the stack's gateways read sluice.control.events and would evict too.
    settings = Settings(
        kafka_bootstrap=stack.stores.kafka_bootstrap, topic_prefix="ctl" + secrets.token_hex(4)
    )
    topic = Topics(settings.topic_prefix).control_events
    await ensure_topics(settings, [topic])
    redis = Redis.from_url(stack.stores.redis_url)
    broker = create_broker(settings, "control-test")
    await broker.start()
    before, during = (hash_api_key("sk_test_" + secrets.token_urlsafe(32)) for _ in range(2))
    try:
        # Published while no reader runs; the entry is still cached (admin's own eviction failed).
        event = ControlEvent(kind="api_key.revoked", key_hash=before)
        await broker.publish(msgspec.json.encode(event), topic)
        await redis.set(key_cache_name(before), b'{"stale": 1}', ex=300)
        reader = ControlReader(settings, topic, processor(broker, settings, redis))
        task = asyncio.create_task(reader.run())
        try:
            took = await _gone(redis, key_cache_name(before))
            assert await redis.get(generation_name(key_cache_name(before))) is not None  # bumped
            # And one published while it runs.
            await redis.set(key_cache_name(during), b'{"stale": 1}', ex=300)
            await broker.publish(
                msgspec.json.encode(ControlEvent(kind="api_key.revoked", key_hash=during)), topic
            )
            took_live = await _gone(redis, key_cache_name(during))
            print(f"evicted {took:.2f} s after start (event from before), {took_live:.2f} s after publish")
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
    finally:
        await broker.stop()
        await redis.aclose()

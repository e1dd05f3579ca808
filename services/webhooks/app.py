"""Webhooks service: registers endpoints and delivers domain events to them (issue 6).

Three loops in one process: the command consumer (endpoint and operator commands), the event
consumer (fan-out into delivery rows) and the delivery worker (claims due rows, posts them).
"""

from __future__ import annotations

import asyncio
from typing import Any

from faststream.asgi import AsgiFastStream

from common.broker import consumer_options, create_broker, ensure_topics, service_topics
from common.db import create_engine, ping, sessionmaker
from common.health import broker_check, health_routes
from common.logging import setup_logging
from common.rpc import instance_id
from common.settings import Settings
from common.topics import Topics
from webhooks.delivery import DeliveryWorker, Policy, Sender
from webhooks.handlers import WebhooksRuntime
from webhooks.retention import Pruner
from webhooks.service import Env
from webhooks.signing import SecretBox


def create_app(settings: Settings) -> AsgiFastStream:
    setup_logging("webhooks")
    topics = Topics(settings.topic_prefix)
    group = topics.group("webhooks")  # follows the prefix: see Topics.group
    broker = create_broker(settings, "webhooks")
    engine = create_engine(settings.database_url, settings.db_pool_size)
    sm = sessionmaker(engine)
    policy = Policy.from_settings(settings)
    box = SecretBox(settings.key_ring)
    sender = Sender(policy)
    worker = DeliveryWorker(sm, sender, box, instance_id(settings, "webhooks"), settings.webhooks_poll_s)
    pruner = Pruner(sm, settings.webhooks_retention_s, settings.webhooks_prune_interval_s)
    env = Env(box=box, allow_private=policy.allow_private, max_attempts=policy.max_attempts)
    runtime = WebhooksRuntime(settings, broker, sm, topics, env, worker.wake)
    process_events = runtime.event_processor()
    process_commands = runtime.command_processor()
    tasks: list[asyncio.Task[Any]] = []

    @broker.subscriber(topics.events, **consumer_options(settings, group, background=True))
    async def on_events(msgs: list[bytes]) -> None:
        await process_events(msgs)

    @broker.subscriber(topics.webhooks_commands, **consumer_options(settings, group + "-commands"))
    async def on_commands(msgs: list[bytes]) -> None:
        await process_commands(msgs)

    async def startup() -> None:
        await ensure_topics(settings, service_topics(settings))

    async def started() -> None:
        tasks.append(asyncio.create_task(worker.run(), name="delivery-worker"))
        tasks.append(asyncio.create_task(pruner.run(), name="retention"))

    async def shutdown() -> None:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await worker.stop()
        await sender.close()
        await engine.dispose()

    def stats() -> dict[str, Any]:
        return {
            "commands": runtime.commands_handled,
            "deliveries_created": runtime.deliveries_created,
            "attempts_sent": worker.sent,
            "in_flight": len(worker.tasks),
            "deliveries_pruned": pruner.deliveries_pruned,
            "events_pruned": pruner.events_pruned,
        }

    return AsgiFastStream(
        broker,
        asgi_routes=health_routes(
            "webhooks", lambda: {"database": lambda: ping(engine), "kafka": broker_check(broker)}, stats=stats
        ),
        on_startup=[startup],
        after_startup=[started],
        on_shutdown=[shutdown],
    )

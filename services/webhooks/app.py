"""Webhooks service: registers endpoints and delivers domain events to them.

Two consumers and two supervised tasks in one process: the command consumer (endpoint and
operator commands), the event consumer (fan-out into delivery rows), the delivery worker
(claims due rows, posts them) and the retention sweep.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from faststream.asgi import AsgiFastStream

from common.broker import subscribe
from common.logging import setup_logging
from common.outbox import Outbox
from common.rpc import instance_id
from common.service import build_runtime, consumer_app
from common.settings import Settings
from webhooks.delivery import DeliveryWorker, Policy, Sender
from webhooks.handlers import WebhooksConsumer
from webhooks.metrics import MetricsRefresher
from webhooks.retention import Pruner
from webhooks.service import Env
from webhooks.signing import SecretBox


def create_app(settings: Settings) -> AsgiFastStream:
    setup_logging("webhooks")
    runtime = build_runtime("webhooks", settings)
    group = runtime.topics.group("webhooks")  # follows the prefix: see Topics.group
    policy = Policy.from_settings(settings)
    box = SecretBox(settings.key_ring)
    sender = Sender(policy)
    worker = DeliveryWorker(
        runtime.sessions,
        sender,
        box,
        instance_id(settings, "webhooks"),
        settings.webhooks_poll_s,
        linger_s=settings.webhooks_linger_s,
    )
    pruner = Pruner(runtime.sessions, settings.webhooks_retention_s, settings.webhooks_prune_interval_s)
    env = Env(
        box=box,
        allow_private=policy.allow_private,
        max_attempts=policy.max_attempts,
        events_kept_s=settings.webhooks_retention_s,
    )
    outbox = Outbox("webhooks", runtime.broker, lazy_delete=True)
    consumer = WebhooksConsumer(
        settings,
        runtime.broker,
        runtime.sessions,
        runtime.topics,
        env,
        worker.wake,
        outbox,
    )
    subscribe(
        runtime.broker,
        settings,
        runtime.topics.events,
        group,
        consumer.event_processor(runtime.readiness),
        linger=True,  # events come in volume; a delivery starts within the linger
    )
    subscribe(
        runtime.broker,
        settings,
        runtime.topics.webhooks_commands,
        group + "-commands",
        consumer.command_processor(runtime.readiness),
    )
    runtime.on_stop += [worker.stop, sender.close]

    def stats() -> dict[str, Any]:
        return {
            "commands": consumer.commands_handled,
            "deliveries_created": consumer.deliveries_created,
            "attempts_sent": worker.sent,
            "worker_turns": worker.turns,
            "in_flight": len(worker.tasks),
            "deliveries_pruned": pruner.deliveries_pruned,
            "events_pruned": pruner.events_pruned,
        }

    return consumer_app(
        runtime,
        tasks={
            "delivery-worker": partial(worker.run, runtime.readiness),
            "retention": partial(pruner.run, runtime.readiness),
            "webhook-metrics": partial(MetricsRefresher(runtime.sessions).run, runtime.readiness),
            "outbox-relay": partial(outbox.relay_forever, runtime.sessions),
        },
        stats=stats,
    )

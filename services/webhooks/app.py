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
    service_runtime = build_runtime("webhooks", settings)
    group = service_runtime.topics.group("webhooks")  # follows the prefix: see Topics.group
    policy = Policy.from_settings(settings)
    box = SecretBox(settings.key_ring)
    sender = Sender(policy)
    worker = DeliveryWorker(
        service_runtime.sessions,
        sender,
        box,
        instance_id(settings, "webhooks"),
        settings.webhooks_poll_s,
        linger_s=settings.webhooks_linger_s,
    )
    pruner = Pruner(
        service_runtime.sessions, settings.webhooks_retention_s, settings.webhooks_prune_interval_s
    )
    env = Env(
        box=box,
        allow_private=policy.allow_private,
        max_attempts=policy.max_attempts,
        events_kept_s=settings.webhooks_retention_s,
    )
    outbox = Outbox("webhooks", service_runtime.broker, lazy_delete=True)
    runtime = WebhooksConsumer(
        settings,
        service_runtime.broker,
        service_runtime.sessions,
        service_runtime.topics,
        env,
        worker.wake,
        outbox,
    )
    subscribe(
        service_runtime.broker,
        settings,
        service_runtime.topics.events,
        group,
        runtime.event_processor(service_runtime.readiness),
        background=True,
    )
    subscribe(
        service_runtime.broker,
        settings,
        service_runtime.topics.webhooks_commands,
        group + "-commands",
        runtime.command_processor(service_runtime.readiness),
    )
    service_runtime.on_stop += [worker.stop, sender.close]

    def stats() -> dict[str, Any]:
        return {
            "commands": runtime.commands_handled,
            "deliveries_created": runtime.deliveries_created,
            "attempts_sent": worker.sent,
            "worker_turns": worker.turns,
            "in_flight": len(worker.tasks),
            "deliveries_pruned": pruner.deliveries_pruned,
            "events_pruned": pruner.events_pruned,
        }

    return consumer_app(
        service_runtime,
        tasks={
            "delivery-worker": partial(worker.run, service_runtime.readiness),
            "retention": partial(pruner.run, service_runtime.readiness),
            "webhook-metrics": partial(
                MetricsRefresher(service_runtime.sessions).run, service_runtime.readiness
            ),
            "outbox-relay": partial(outbox.relay_forever, service_runtime.sessions),
        },
        stats=stats,
    )

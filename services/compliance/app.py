"""Compliance service: FastStream consumer of commands needing a policy decision."""

from __future__ import annotations

from faststream.asgi import AsgiFastStream

from common.broker import subscribe
from common.logging import setup_logging
from common.outbox import Outbox
from common.service import build_runtime, consumer_app
from common.settings import Settings
from compliance.handlers import ComplianceConsumer


def create_app(settings: Settings) -> AsgiFastStream:
    setup_logging("compliance")
    runtime = build_runtime("compliance", settings)
    outbox = Outbox("compliance", runtime.broker, lazy_delete=True)
    consumer = ComplianceConsumer(settings, runtime.broker, runtime.sessions, runtime.topics, outbox)
    group = runtime.topics.group("compliance")  # follows the prefix: see Topics.group
    subscribe(
        runtime.broker,
        settings,
        runtime.topics.compliance_commands,
        group,
        consumer.processor(runtime.readiness),
    )
    subscribe(
        runtime.broker,
        settings,
        runtime.topics.compliance_releases,
        f"{group}-releases",
        consumer.releases_processor(runtime.readiness),
        background=True,
    )
    subscribe(
        runtime.broker,
        settings,
        runtime.topics.events,
        f"{group}-usage",
        consumer.usage_processor(runtime.readiness),
        linger=True,  # one record in a hundred gives cap back: batches, not records
    )
    return consumer_app(
        runtime,
        tasks={"outbox-relay": lambda: outbox.relay_forever(runtime.sessions)},
        stats=lambda: {"decided": consumer.decided, "failed_closed": consumer.failed_closed},
    )

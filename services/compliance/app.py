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
    service_runtime = build_runtime("compliance", settings)
    outbox = Outbox("compliance", service_runtime.broker, lazy_delete=True)
    runtime = ComplianceConsumer(
        settings, service_runtime.broker, service_runtime.sessions, service_runtime.topics, outbox
    )
    group = service_runtime.topics.group("compliance")  # follows the prefix: see Topics.group
    subscribe(
        service_runtime.broker,
        settings,
        service_runtime.topics.compliance_commands,
        group,
        runtime.processor(service_runtime.readiness),
    )
    subscribe(
        service_runtime.broker,
        settings,
        service_runtime.topics.compliance_releases,
        f"{group}-releases",
        runtime.releases_processor(service_runtime.readiness),
        background=True,
    )
    subscribe(
        service_runtime.broker,
        settings,
        service_runtime.topics.events,
        f"{group}-usage",
        runtime.usage_processor(service_runtime.readiness),
        background=True,
    )
    return consumer_app(
        service_runtime,
        tasks={"outbox-relay": lambda: outbox.relay_forever(service_runtime.sessions)},
        stats=lambda: {"decided": runtime.decided, "failed_closed": runtime.failed_closed},
    )

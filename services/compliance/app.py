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
    rt = build_runtime("compliance", settings)
    outbox = Outbox("compliance", rt.broker, lazy_delete=True)
    runtime = ComplianceConsumer(settings, rt.broker, rt.sm, rt.topics, outbox)
    group = rt.topics.group("compliance")  # follows the prefix: see Topics.group
    subscribe(rt.broker, settings, rt.topics.compliance_commands, group, runtime.processor(rt.readiness))
    subscribe(
        rt.broker,
        settings,
        rt.topics.compliance_releases,
        f"{group}-releases",
        runtime.releases_processor(rt.readiness),
        background=True,
    )
    subscribe(
        rt.broker,
        settings,
        rt.topics.events,
        f"{group}-usage",
        runtime.usage_processor(rt.readiness),
        background=True,
    )
    return consumer_app(
        rt,
        tasks={"outbox-relay": lambda: outbox.relay_forever(rt.sm)},
        stats=lambda: {"decided": runtime.decided, "failed_closed": runtime.failed_closed},
    )

"""Ledger service: FastStream consumer of ledger commands, with health and metrics routes."""

from __future__ import annotations

from faststream.asgi import AsgiFastStream

from common.broker import subscribe
from common.inbox import Inbox
from common.logging import setup_logging
from common.outbox import Outbox
from common.service import build_runtime, consumer_app
from common.settings import Settings
from ledger.effects import LedgerConfig
from ledger.handlers import LedgerConsumer
from ledger.simulator import Simulator


def create_app(settings: Settings) -> AsgiFastStream:
    setup_logging("ledger")
    rt = build_runtime("ledger", settings)
    cfg = LedgerConfig(settle_s=settings.sandbox_settle_s)
    outbox = Outbox("ledger", rt.broker, lazy_delete=True)
    runtime = LedgerConsumer(settings, rt.broker, rt.sm, outbox, Inbox("ledger"), rt.topics, cfg=cfg)
    simulator = Simulator(rt.sm, outbox, rt.topics, cfg)
    subscribe(
        rt.broker,
        settings,
        rt.topics.ledger_commands,
        rt.topics.group("ledger"),
        runtime.processor(rt.readiness),
    )
    return consumer_app(
        rt,
        tasks={"outbox-relay": lambda: outbox.relay_forever(rt.sm), "simulator": simulator.run_forever},
        stats=lambda: {"processed": runtime.processed, "simulated_steps": simulator.steps},
    )

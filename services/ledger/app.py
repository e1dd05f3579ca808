"""Ledger service: FastStream consumer of ledger commands, with health routes."""

from __future__ import annotations

import asyncio
from typing import Any

from faststream.asgi import AsgiFastStream

from common.broker import consumer_options, create_broker, ensure_topics, service_topics
from common.db import create_engine, ping, sessionmaker
from common.health import broker_check, health_routes
from common.inbox import Inbox
from common.logging import setup_logging
from common.outbox import Outbox
from common.settings import Settings
from common.topics import Topics
from ledger.effects import LedgerConfig
from ledger.handlers import LedgerRuntime
from ledger.simulator import Simulator


def create_app(settings: Settings) -> AsgiFastStream:
    setup_logging("ledger")
    topics = Topics(settings.topic_prefix)
    broker = create_broker(settings, "ledger")
    engine = create_engine(settings.database_url, settings.db_pool_size)
    sm = sessionmaker(engine)
    cfg = LedgerConfig(settle_s=settings.sandbox_settle_s)
    runtime = LedgerRuntime(
        settings,
        broker,
        sm,
        Outbox("ledger", broker, lazy_delete=True),
        Inbox("ledger"),
        topics,
        cfg=cfg,
    )
    simulator = Simulator(sm, runtime.outbox, topics, cfg)
    process = runtime.processor()
    tasks: list[asyncio.Task[Any]] = []

    @broker.subscriber(topics.ledger_commands, **consumer_options(settings, topics.group("ledger")))
    async def on_commands(msgs: list[bytes]) -> None:
        await process(msgs)

    async def startup() -> None:
        await ensure_topics(settings, service_topics(settings))

    async def started() -> None:
        tasks.append(asyncio.create_task(runtime.outbox.relay_forever(sm)))
        tasks.append(asyncio.create_task(simulator.run_forever()))

    async def shutdown() -> None:
        for t in tasks:
            t.cancel()
        await engine.dispose()

    return AsgiFastStream(
        broker,
        asgi_routes=health_routes(
            "ledger",
            lambda: {"database": lambda: ping(engine), "kafka": broker_check(broker)},
            stats=lambda: {"processed": runtime.processed, "simulated_steps": simulator.steps},
        ),
        on_startup=[startup],
        after_startup=[started],
        on_shutdown=[shutdown],
    )

"""Compliance service: FastStream consumer of commands needing a policy decision."""

from __future__ import annotations

from faststream.asgi import AsgiFastStream
from sqlalchemy.ext.asyncio import create_async_engine

from common.broker import consumer_options, create_broker, ensure_topics, service_topics
from common.db import ping, sessionmaker
from common.health import broker_check, health_routes
from common.logging import setup_logging
from common.settings import Settings
from common.topics import Topics
from compliance import usage
from compliance.handlers import ComplianceRuntime

# Fail fast when the store is unreachable, well inside the gateway's wait (default 10 s):
# three attempts of a few seconds each, then the caller is answered 503.
CONNECT_TIMEOUT_S = 2
STATEMENT_TIMEOUT_S = 3
POOL_WAIT_S = 2


def create_app(settings: Settings) -> AsgiFastStream:
    setup_logging("compliance")
    topics = Topics(settings.topic_prefix)
    broker = create_broker(settings, "compliance")
    engine = create_async_engine(
        settings.database_url,
        pool_size=settings.db_pool_size,
        max_overflow=settings.db_pool_size,
        pool_timeout=POOL_WAIT_S,
        pool_recycle=1800,
        connect_args={"timeout": CONNECT_TIMEOUT_S, "command_timeout": STATEMENT_TIMEOUT_S},
    )
    sm = sessionmaker(engine)
    runtime = ComplianceRuntime(settings, broker, sm, topics)
    process = runtime.processor()

    group = topics.group("compliance")  # follows the prefix: see Topics.group

    @broker.subscriber(topics.compliance_commands, **consumer_options(settings, group))
    async def on_commands(msgs: list[bytes]) -> None:
        await process(msgs)

    @broker.subscriber(topics.events, **consumer_options(settings, f"{group}-usage", background=True))
    async def on_events(msgs: list[bytes]) -> None:
        await usage.release_batch(sm, msgs)

    async def startup() -> None:
        await ensure_topics(settings, service_topics(settings))

    async def shutdown() -> None:
        await engine.dispose()

    return AsgiFastStream(
        broker,
        asgi_routes=health_routes(
            "compliance",
            lambda: {"database": lambda: ping(engine), "kafka": broker_check(broker)},
            stats=lambda: {"decided": runtime.decided, "failed_closed": runtime.failed_closed},
        ),
        on_startup=[startup],
        on_shutdown=[shutdown],
    )

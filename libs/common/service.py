"""One way to build a service process: its stores, readiness, supervised tasks, the consumer
app with ``/healthz``, ``/readyz`` and ``/metrics``, and serving it.

Every service builds a :class:`Runtime` (the broker, the database engine, Redis when it needs
it, one :class:`~common.health.Readiness` and one :class:`~common.tasks.Supervisor`). The
consumers turn it into an ASGI app with :func:`consumer_app`; the HTTP services (gateway,
admin) use :func:`readyz` for their own route. Shutdown is the same everywhere: supervised
tasks are cancelled and awaited, then the stores are closed.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from faststream.asgi import AsgiFastStream
from faststream.kafka import KafkaBroker
from prometheus_client import make_asgi_app
from redis.asyncio import Redis
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from common.broker import create_broker, ensure_shared_topics
from common.db import Fencing, create_engine, ping, sessionmaker
from common.health import Blips, Check, Readiness, broker_check, health_routes, readiness_report
from common.settings import Settings
from common.tasks import Supervisor
from common.topics import Topics

log = logging.getLogger(__name__)


def connect_redis(settings: Settings) -> Redis:
    """Redis with every call bounded: a stalled or stopped Redis is an error within
    ``redis_timeout_s``, never a hang."""
    return Redis.from_url(
        settings.redis_url,
        socket_timeout=settings.redis_timeout_s,
        socket_connect_timeout=settings.redis_timeout_s,
        retry_on_timeout=False,
    )


@dataclass
class Runtime:
    name: str
    settings: Settings
    broker: KafkaBroker
    engine: AsyncEngine
    sessions: async_sessionmaker[AsyncSession]
    topics: Topics
    readiness: Readiness = field(default_factory=Readiness)
    redis: Redis | None = None
    # Closed after the supervised tasks stopped, before the stores (HTTP clients, workers).
    on_stop: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    supervisor: Supervisor = field(init=False)
    blips: Blips = field(init=False)

    def __post_init__(self) -> None:
        self.supervisor = Supervisor(self.readiness)
        self.blips = Blips(self.settings.readiness_grace_s)

    def checks(self) -> dict[str, Check]:
        checks: dict[str, Check] = {"database": lambda: ping(self.engine), "kafka": broker_check(self.broker)}
        if self.redis is not None:
            checks["redis"] = self.redis.ping
        return checks

    def watch_database(self) -> None:
        """With several hosts in ``SLUICE_DATABASE_URL``, the fencing check
        (:class:`common.db.Fencing`, docs/operations/fencing.md) as a supervised task; nothing
        with one host."""
        fencing = Fencing.of(
            self.settings.database_url,
            interval_s=self.settings.db_fencing_interval_s,
            timeout_s=self.settings.db_connect_timeout_s,
        )
        if fencing is not None:
            self.supervisor.start("database-fencing", fencing.run)

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[None]:
        """The body of an HTTP service's lifespan: the fencing check runs; on the way out, the
        supervised tasks stop, then the broker, then the stores."""
        self.watch_database()
        try:
            yield
        finally:
            await self.supervisor.stop()
            await self.broker.stop()
            await self.close()

    async def close(self) -> None:
        """Stop the supervised tasks (awaited), then close the stores."""
        await self.supervisor.stop()
        for stop in self.on_stop:
            await stop()
        if self.redis is not None:
            await self.redis.aclose()
        await self.engine.dispose()


def build_runtime(
    name: str, settings: Settings, *, redis: bool = False, command_timeout_s: float | None = None
) -> Runtime:
    engine = create_engine(
        settings.database_url,
        settings.db_pool_size,
        connect_timeout_s=settings.db_connect_timeout_s,
        command_timeout_s=command_timeout_s or settings.db_command_timeout_s,
        pool_timeout_s=settings.db_connect_timeout_s,
    )
    return Runtime(
        name=name,
        settings=settings,
        broker=create_broker(settings, name),
        engine=engine,
        sessions=sessionmaker(engine),
        topics=Topics(settings.topic_prefix),
        redis=connect_redis(settings) if redis else None,
    )


async def readyz(runtime: Runtime) -> tuple[int, dict[str, Any]]:
    """``/readyz`` of any service: stores, broker, consumers and supervised tasks."""
    return await readiness_report(runtime.name, runtime.checks(), runtime.readiness, runtime.blips)


TASKS = "supervised tasks"


def consumer_app(
    runtime: Runtime,
    *,
    tasks: dict[str, Callable[[], Awaitable[None]]] | None = None,
    stats: Callable[[], dict[str, Any]] | None = None,
) -> AsgiFastStream:
    """The ASGI app of a consumer service: the broker's subscribers, health and metrics routes,
    and ``tasks`` started under supervision once the broker runs (its consumers joined their
    groups); ``/readyz`` says not ready until then."""

    async def startup() -> None:
        await ensure_shared_topics(runtime.settings)
        if tasks:  # not ready until they run: a new instance would report ready and do no work
            runtime.readiness.fail(TASKS, "not started: the consumers are joining their groups")

    async def started() -> None:
        runtime.watch_database()
        for name, run in (tasks or {}).items():
            runtime.supervisor.start(name, run)
        runtime.readiness.ok(TASKS)

    return AsgiFastStream(
        runtime.broker,
        asgi_routes=[
            *health_routes(
                runtime.name, runtime.checks, stats=stats, readiness=runtime.readiness, blips=runtime.blips
            ),
            ("/metrics", make_asgi_app()),
        ],
        on_startup=[startup],
        after_startup=[started],
        on_shutdown=[runtime.close],
    )


def port_taken(host: str, port: int) -> OSError | None:
    """Why ``host:port`` cannot be bound now (another process listens there), else None. The
    probe binds as uvicorn does (``SO_REUSEADDR``: a port in TIME_WAIT is free) and lets go."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            return exc
    return None


def refuse_taken_port(host: str, port: int, setting: str) -> None:
    """Stop the start, naming ``setting``, when its port is held by another process: two
    instances of a service on one host each need their own (docs/operations/deploy.md,
    "Several instances on one host"); uvicorn alone would only say "address already in use"."""
    exc = port_taken(host, port)
    if exc is not None:
        log.critical(
            "port %s:%d cannot be served (%s): another process holds it; give this instance a"
            " port of its own with %s",
            host,
            port,
            exc.strerror or exc,
            setting,
        )
        raise SystemExit(2)


def serve(
    app: Any,
    host: str,
    port: int,
    *,
    setting: str = "its port setting",
    grace_s: float = 5.0,
    protocol: type | None = None,
) -> None:
    """Run an ASGI app with uvicorn on uvloop, with httptools; a port another process holds
    stops the start with one line naming ``setting`` (``SLUICE_<SERVICE>_PORT``). On SIGTERM,
    requests in flight get ``grace_s`` to finish before they are cancelled: a service that waits
    on other services for an answer passes its whole request deadline plus a margin, so scaling
    it in answers every request it took (cancelled, a request was answered 500).

    ``uvicorn.Server.serve`` under a plain ``asyncio.run`` would use the stdlib loop: uvicorn
    only installs uvloop in its own ``run``, so the loop is chosen here. ``protocol``: an HTTP
    protocol class of uvicorn's to use instead of its default (the gateway's door).
    """
    refuse_taken_port(host, port, setting)
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="info",  # start-up and shutdown lines (JSON); access log stays off
        log_config=None,  # no text handlers of uvicorn's own: its loggers propagate to the JSON root
        access_log=False,
        lifespan="on",
        http=protocol or "auto",
        timeout_graceful_shutdown=max(1, round(grace_s)),
        # Forwarding headers are read by common.clientaddr, from SLUICE_TRUSTED_PROXIES only:
        # uvicorn's default would believe them from 127.0.0.1.
        proxy_headers=False,
    )
    server = uvicorn.Server(config)

    async def main() -> None:
        freezing = asyncio.create_task(freeze_after_start(server))
        try:
            await server.serve()
        finally:
            freezing.cancel()

    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency; stdlib loop elsewhere
        asyncio.run(main())
    else:
        uvloop.run(main())


GC_GEN0_THRESHOLD = 10_000


async def freeze_after_start(server: uvicorn.Server) -> None:
    """Once the service has started, everything it built (modules, the app, the ORM's
    metadata, pools) goes to the collector's permanent generation (``gc.freeze``) and the
    youngest generation is collected every 10,000 allocations instead of 700.

    Measured (make bench's overload part, 2026-11-26): without it a full collection walked the
    whole start-up heap, 145 ms on average and 272 ms at worst in the gateway, 14 times in 46 s,
    and 200-270 ms in each consumer; every request in flight, refusals included, waited behind
    it (shed p99 395 ms while the shed median was 6 ms)."""
    while not server.started:  # noqa: ASYNC110 - uvicorn.Server.started is a plain flag
        await asyncio.sleep(0.1)
    gc.collect()
    gc.freeze()
    _, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(GC_GEN0_THRESHOLD, gen1, gen2)

"""Gateway service: the partner API (Litestar), publishing commands to Kafka."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import msgspec
from litestar import Litestar, Request, Response, get, route
from litestar.datastructures import State
from litestar.enums import HttpMethod
from litestar.handlers import HTTPRouteHandler
from redis.asyncio import Redis
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from common.asyncapi import build_asyncapi
from common.authfail import FailureLimiter
from common.broker import ensure_shared_topics
from common.contracts import Result
from common.http import http_app, serve_metrics
from common.logging import setup_logging
from common.rpc import RpcClient
from common.service import build_runtime
from common.settings import Settings
from gateway import control, revocations
from gateway.auth import Authenticator
from gateway.door.admission import COMMANDS, READS, Admission, LaneMetrics
from gateway.door.asgi import Door, Identities
from gateway.door.concurrency_limit import QueueDelay
from gateway.idempotency import IdempotencyStore
from gateway.openapi.document import build_document
from gateway.pipeline import Endpoint, Pipeline
from gateway.ratelimit import RateLimiter
from gateway.routes import (
    customers,
    events,
    fees,
    health,
    onboarding,
    resources,
    transfers,
    virtual_accounts,
    wallets,
    webhooks,
)
from gateway.transport import Router, direct, routed

ENDPOINTS: list[Endpoint] = [
    *health.ENDPOINTS,
    *customers.ENDPOINTS,
    *wallets.ENDPOINTS,
    *virtual_accounts.ENDPOINTS,
    *transfers.ENDPOINTS,
    *webhooks.ENDPOINTS,
    *events.ENDPOINTS,
    *fees.ENDPOINTS,
    *resources.ENDPOINTS,
    *onboarding.ENDPOINTS,
]


def _litestar_path(path: str) -> str:
    import re

    return re.sub(r"\{(\w+)\}", r"{\1:str}", path)


def _direct_handler(path: str, by_method: dict[str, Endpoint]) -> HTTPRouteHandler:
    """One handler per path for all its methods, so Litestar's automatic OPTIONS answer and
    its 405 ``Allow`` header list every method of the path."""

    async def handler(request: Request[Any, Any, State]) -> Response[bytes]:
        return await direct(request, by_method[request.method])

    handler.__name__ = path.strip("/").replace("/", "_").replace("-", "_").replace("{", "").replace("}", "")
    methods = [HttpMethod(m) for m in sorted(by_method)]
    # Every answer sets its own status. Stated so that Litestar does not default a path with
    # DELETE to 204 and then refuse, at startup, a handler that answers a body.
    return route(_litestar_path(path), http_method=methods, name=handler.__name__, status_code=200)(handler)


def _direct_handlers(endpoints: list[Endpoint]) -> list[HTTPRouteHandler]:
    by_path: dict[str, dict[str, Endpoint]] = {}
    for ep in endpoints:
        by_path.setdefault(ep.path, {})[ep.method] = ep
    return [_direct_handler(path, methods) for path, methods in by_path.items()]


@route("/", http_method=["POST"], name="routed")
async def routed_handler(request: Request[Any, Any, State]) -> Response[bytes]:
    return await routed(request)


@get("/schema/asyncapi.json", include_in_schema=False)
async def asyncapi_json(state: State) -> Response[bytes]:
    return Response(state.asyncapi, media_type="application/json")


def build_door(settings: Settings) -> Door:
    """The door's two lanes, sharing one queue-delay override (the loop is one)."""
    queue = QueueDelay(settings.admission_lag_target_s, settings.admission_lag_interval_s)

    def lane(ceiling: int, tenant_ceiling: int, metrics: LaneMetrics) -> Admission:
        return Admission(
            ceiling,
            tenant_ceiling,
            initial=settings.admission_initial_limit,
            min_limit=settings.admission_min_limit,
            target_s=settings.admission_target_latency_s,
            tolerance=settings.admission_tolerance,
            queue_size=settings.admission_queue_size,
            sandbox_share=settings.admission_sandbox_share,
            queue=queue,
            metrics=metrics,
        )

    commands = lane(settings.max_in_flight, settings.tenant_max_in_flight, COMMANDS)
    reads = lane(settings.read_max_in_flight, settings.read_tenant_max_in_flight, READS)
    return Door(commands, reads, Identities())


def credentials(
    settings: Settings, redis: Redis, sessions: async_sessionmaker[AsyncSession]
) -> tuple[Authenticator, IdempotencyStore]:
    """The pipeline's authentication (its revocation floor in ``Authenticator.revocations``,
    for the caller to poll) and its idempotency records, over Valkey and PostgreSQL."""
    failures = FailureLimiter(redis, "gateway", settings.auth_failure_limit_per_minute)
    mac = settings.cache_mac  # the gateway's key for what it trusts from Valkey
    floor = revocations.Revocations(trust_s=settings.gateway_revocation_trust_s)
    auth = Authenticator(redis, sessions, mac, settings.jwt_key, settings.jwt_issuer, failures, floor)
    idem = IdempotencyStore(
        redis,
        settings.idempotency_ttl_s,
        settings.gateway_timeout_s,
        settings.key_ring,
        lease_s=settings.gateway_timeout_s + settings.idempotency_lease_margin_s,
        mac=mac,
    )
    return auth, idem


def create_app(settings: Settings) -> Litestar:
    door = build_door(settings)

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        setup_logging("gateway")
        # A partner waits on the gateway: its store calls are bounded well inside 2 s, so a
        # store that is down is a 503 with Retry-After, never a hang.
        runtime = build_runtime("gateway", settings, redis=True, command_timeout_s=1.5)
        redis = runtime.redis
        assert redis is not None
        await ensure_shared_topics(settings)
        await runtime.broker.start()
        auth, idem = credentials(settings, redis, runtime.sessions)
        floor = auth.revocations
        poll = revocations.reader(runtime.sessions)
        runtime.supervisor.start(
            "revocations", lambda: revocations.poll_forever(floor, poll, settings.gateway_revocation_poll_s)
        )

        async def record(results: list[Result]) -> None:  # answers seen by the reply consumer
            await pipeline.on_results(results)

        rpc = RpcClient(runtime.broker, settings, "gateway", on_results=record)
        pipeline = Pipeline(settings, auth, RateLimiter(redis), idem, rpc, runtime.sessions, door.identities)
        await rpc.start(runtime.supervisor)
        reader = control.ControlReader(
            settings, runtime.topics.control_events, control.processor(runtime.broker, settings, redis, floor)
        )
        runtime.supervisor.start("control-events", reader.run)
        runtime.supervisor.start("loop-lag", door.commands.queue.watch)
        app.state.update(
            settings=settings,
            runtime=runtime,
            engine=runtime.engine,
            redis=redis,
            broker=runtime.broker,
            pipeline=pipeline,
            router=Router(ENDPOINTS),
            asyncapi=msgspec.json.encode(build_asyncapi(settings.topic_prefix)),
        )
        metrics_host = settings.gateway_metrics_host or settings.gateway_host
        async with serve_metrics(metrics_host, settings.gateway_metrics_port), runtime.serving():
            yield
        await rpc.drop_reply_topic()

    handlers = [*_direct_handlers(ENDPOINTS), routed_handler, asyncapi_json, *onboarding.PAGES]
    # No /metrics on the partner port (docs/operations.md, "Metrics"): they are on
    # gateway_metrics_port.
    document = lambda: build_document(ENDPOINTS)  # noqa: E731
    app = http_app("gateway", settings, lifespan, handlers, document, metrics_route=False)
    # Outermost: before the request id, the middleware, routing and any body read
    # (docs/performance/overload.md).
    app.asgi_handler = door.around(app.asgi_handler)
    app.state.door = door
    return app

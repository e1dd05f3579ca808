"""Admin service: the operator API on its own port (contract section 9).

``POST /`` with ``Authorization: Bearer <operator token>`` and ``{action, ...}``. This module
is the boundary: it authenticates the operator, runs the action in one transaction with its
audit entry, then applies the after-commit effects (cache invalidation, control events).
Refusals are audited too, in a transaction of their own.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import msgspec
from litestar import Litestar, Request, Response, get, post
from litestar.datastructures import State
from redis.asyncio import Redis

from admin import actions, operators
from admin import repository as repo
from admin.context import ActionContext
from admin.openapi import build_document
from common.broker import create_broker, ensure_topics, service_topics
from common.db import create_engine, ping, sessionmaker, transaction
from common.errors import ErrorCode, ServiceError
from common.health import broker_check, run_checks
from common.http import EXCEPTION_HANDLERS, openapi_routes, request_id_middleware, request_id_of
from common.logging import setup_logging
from common.outbox import Outbox, OutMessage
from common.rpc import RpcClient
from common.settings import Settings

log = logging.getLogger(__name__)


def _requested_action(raw: bytes) -> str:
    """The action name as sent (for the audit of a refused request), without trusting it."""
    try:
        body = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return "unknown"
    action = body.get("action") if isinstance(body, dict) else None
    return action[:64] if isinstance(action, str) and action else "unknown"


async def _after_commit(state: State, ctx: ActionContext, msgs: list[OutMessage]) -> None:
    if ctx.stale_cache:
        try:
            await state.redis.delete(*ctx.stale_cache)
        except Exception:
            log.exception("could not drop %d cache entries", len(ctx.stale_cache))
    await state.outbox.dispatch(state.sm, msgs)


async def _audit_refusal(
    state: State,
    actor: str,
    action: str,
    rid: str,
    outcome: str,
    ctx: ActionContext | None,
    details: dict[str, Any],
) -> None:
    try:
        async with transaction(state.sm) as session:
            await repo.append_audit(
                session,
                actor=actor,
                action=action,
                request_id=rid,
                outcome=outcome,
                target=ctx.target if ctx else None,
                details={**(ctx.details if ctx else {}), **details},
            )
    except Exception:
        log.exception("could not audit a refused %s", action)


@post("/", status_code=200)
async def administer(request: Request[Any, Any, State], state: State) -> Response[Any]:
    rid = request_id_of(request)
    raw = await request.body()
    actor, action, ctx = "unauthenticated", _requested_action(raw), None
    try:
        actor = operators.authenticate(state.operators, request.headers.get("authorization"))
        action = actions.action_of(raw)
        async with state.sm() as session:
            async with session.begin():
                ctx = ActionContext(session, state.redis, state.settings, state.rpc, state.outbox, actor, rid)
                data = await actions.ACTIONS[action](ctx, raw)
                await repo.append_audit(
                    session,
                    actor=actor,
                    action=action,
                    request_id=rid,
                    outcome="ok",
                    target=ctx.target,
                    details=ctx.details,
                )
                msgs = await state.outbox.write(session)
            await _after_commit(state, ctx, msgs)
    except ServiceError as err:
        details = {k: v for k, v in err.details.items() if k != "request_id"}
        await _audit_refusal(
            state,
            actor,
            action,
            rid,
            f"refused:{err.code}",
            ctx,
            {"error": {"code": str(err.code), "message": err.message, **details}},
        )
        raise
    except Exception:
        await _audit_refusal(state, actor, action, rid, f"failed:{ErrorCode.INTERNAL_ERROR}", ctx, {})
        raise
    return Response({"success": True, "data": data}, status_code=200)


@get("/healthz")
async def healthz() -> dict[str, str]:
    return {"status": "ok", "service": "admin"}


@get("/readyz")
async def readyz(state: State) -> Response[Any]:
    ok, checks = await run_checks(
        {
            "database": lambda: ping(state.engine),
            "redis": state.redis.ping,
            "kafka": broker_check(state.broker),
        }
    )
    return Response(
        {"status": "ready" if ok else "unavailable", "service": "admin", "checks": checks},
        status_code=200 if ok else 503,
    )


def create_app(settings: Settings) -> Litestar:
    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        setup_logging("admin")
        engine = create_engine(settings.database_url, settings.db_pool_size)
        sm = sessionmaker(engine)
        redis = Redis.from_url(settings.redis_url)
        broker = create_broker(settings, "admin")
        await ensure_topics(settings, service_topics(settings))
        await broker.start()
        rpc = RpcClient(broker, settings, "admin", background=True)
        await rpc.start()
        outbox = Outbox("identity", broker)
        relay = asyncio.create_task(outbox.relay_forever(sm), name="identity-outbox-relay")
        app.state.update(
            settings=settings,
            engine=engine,
            sm=sm,
            redis=redis,
            broker=broker,
            rpc=rpc,
            outbox=outbox,
            operators=operators.parse_operators(settings.admin_tokens),
        )
        try:
            yield
        finally:
            relay.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await relay
            await rpc.stop()
            await broker.stop()
            await redis.aclose()
            await engine.dispose()

    return Litestar(
        route_handlers=[administer, healthz, readyz, *openapi_routes(build_document)],
        lifespan=[lifespan],
        middleware=[request_id_middleware],
        exception_handlers=EXCEPTION_HANDLERS,
        request_max_body_size=settings.max_body_bytes,
        openapi_config=None,
        logging_config=None,  # common.logging owns the handlers (JSON lines)
    )

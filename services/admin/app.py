"""Admin service: the operator API on its own port (docs/operations.md, "The administration
endpoint").

``POST /`` with ``Authorization: Bearer <operator token>`` and ``{action, ...}``. This module
is the boundary: it authenticates the operator, runs the action in one transaction with its
audit entry, then applies the after-commit effects (cache invalidation, control events).
Refusals are audited too, in a transaction of their own.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import msgspec
from litestar import Litestar, Request, Response, post
from litestar.datastructures import State

from admin import repository as repo
from admin.actions import dead_letters
from admin.actions import table as actions
from admin.context import UNKNOWN, ActionContext
from admin.openapi import build_document
from admin.operators import four_eyes
from admin.operators import tokens as operators
from common.auth import evict
from common.authfail import FailureLimiter
from common.broker import ensure_shared_topics, subscribe
from common.clientaddr import client_address
from common.db import transaction
from common.errors import ErrorCode, ServiceError, Unavailable, unavailable
from common.failpoints import failpoint
from common.faults import is_transient
from common.http import http_app, request_id_of
from common.logging import setup_logging
from common.outbox import Outbox, OutMessage
from common.rpc import RpcClient
from common.service import build_runtime
from common.settings import Settings
from common.validation import check_nesting

log = logging.getLogger(__name__)


def _requested_action(raw: bytes) -> str:
    """The action name as sent (for the audit of a refused request), without trusting it."""
    try:
        body = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return "unknown"
    action = body.get("action") if isinstance(body, dict) else None
    if not isinstance(action, str) or not action:
        return "unknown"
    # PostgreSQL text holds no NUL, and an audit row must not carry control characters: the
    # fuzzer's action names with them left refusals unaudited ("could not audit a refused").
    return "".join(c if c.isprintable() else "\ufffd" for c in action[:64])


async def _after_commit(state: State, ctx: ActionContext, msgs: list[OutMessage]) -> None:
    if ctx.stale_cache:
        try:
            await failpoint("admin.evict")  # tests: Redis unreachable at this moment
            await evict(state.redis, ctx.stale_cache)
        except Exception:
            # The control event in the outbox makes every gateway group evict them as soon
            # as Redis answers (gateway.control): the change still holds.
            log.exception("could not drop %d cache entries", len(ctx.stale_cache))
    await state.outbox.dispatch(state.sessions, msgs)


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
        async with transaction(state.sessions) as session:
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


@dataclass
class Attempt:
    """What is known of a request so far, for its audit row if it fails at any stage."""

    request_id: str
    actor: str = "unauthenticated"
    action: str = "unknown"
    ctx: ActionContext | None = None


async def _authenticate(request: Request[Any, Any, State], state: State) -> operators.Operator:
    address = client_address(
        request.client.host if request.client else None,
        lambda name: request.headers.getall(name, []),
        state.settings.trusted_networks,
        state.settings.client_ip_header,
    )
    return await operators.authenticate_limited(
        state.failures, address, state.operators, request.headers.get("authorization")
    )


def _authorize(state: State, operator: operators.Operator, attempt: Attempt, raw: bytes) -> actions.Action:
    """The action asked for, as the operator's role allows it: run at once, or proposed for a
    second approver under four eyes. ``attempt.action`` names it for the audit before it is
    known to be valid."""
    attempt.action = _requested_action(raw)
    attempt.action = actions.action_of(raw)
    four_eyes.check_role(operator.role, attempt.action, raw)
    if four_eyes.needs_approval(state.settings.four_eyes, attempt.action, raw):
        return functools.partial(four_eyes.propose, action=attempt.action)
    return actions.ACTIONS[attempt.action]


async def _run(state: State, attempt: Attempt, run: actions.Action, raw: bytes) -> Any:
    """The action and its audit row in one transaction; the after-commit effects once it holds."""
    async with state.sessions() as session:
        async with session.begin():
            ctx = attempt.ctx = ActionContext(
                session,
                state.redis,
                state.settings,
                state.rpc,
                state.outbox,
                attempt.actor,
                attempt.request_id,
                signing=state.signing,
            )
            data = await run(ctx, raw)
            await repo.append_audit(
                session,
                actor=attempt.actor,
                action=attempt.action,
                request_id=attempt.request_id,
                outcome="proposed" if ctx.status == 202 else "ok",
                target=ctx.target,
                details=ctx.details,
            )
            msgs = await state.outbox.write(session)
        await _after_commit(state, ctx, msgs)
    return data


async def _refused(state: State, attempt: Attempt, exc: Exception) -> Exception:
    """The one place a failure becomes an answer: audited (a login flood aside), and what to
    raise. A store away for a moment (Valkey restarted, PostgreSQL failing over) is a refusal
    the operator retries (503 store_unavailable), not an internal error."""
    audit = functools.partial(_audit_refusal, state, attempt.actor, attempt.action, attempt.request_id)
    if isinstance(exc, ServiceError):
        if exc.details.get("reason") == "authentication_failures":
            return exc  # a login flood is answered from Redis alone: no audit row per attempt
        details = {k: v for k, v in exc.details.items() if k != "request_id"}
        outcome = UNKNOWN if exc.details.get("outcome") == UNKNOWN else f"refused:{exc.code}"
        error = {"error": {"code": str(exc.code), "message": exc.message, **details}}
        await audit(outcome, attempt.ctx, error)
        return exc
    if is_transient(exc):
        log.warning("a store is unavailable: %r", exc)
        await audit(f"failed:{ErrorCode.PROVIDER_UNAVAILABLE}", attempt.ctx, {})
        return unavailable(Unavailable.STORE_UNAVAILABLE, "a store admin needs is unavailable; retry")
    await audit(f"failed:{ErrorCode.INTERNAL_ERROR}", attempt.ctx, {})
    return exc


@post("/", status_code=200)
async def administer(request: Request[Any, Any, State], state: State) -> Response[Any]:
    """One operator action, as its stages: authenticate, read the body (only once the operator
    is known, its depth checked before it is decoded: a deeply nested body is 400, never a
    RecursionError), authorize, run with its audit row, answer."""
    attempt = Attempt(request_id_of(request))
    try:
        operator = await _authenticate(request, state)
        attempt.actor = operator.name
        raw = await request.body()
        check_nesting(raw)
        run = _authorize(state, operator, attempt, raw)
        data = await _run(state, attempt, run, raw)
    except Exception as exc:
        answer = await _refused(state, attempt, exc)
        if answer is exc:
            raise
        raise answer from exc
    assert attempt.ctx is not None
    return Response({"success": True, "data": data}, status_code=attempt.ctx.status)


def create_app(settings: Settings) -> Litestar:
    roster = operators.parse_operators(settings.admin_tokens)
    if settings.four_eyes and four_eyes.approvers([op.role for op in roster]) < 2:
        setup_logging("admin")
        log.critical(
            "sluice: refusing to start admin with four eyes on and fewer than two approvers"
            " (SLUICE_ADMIN_TOKEN entries name:approver=token; docs/security.md)"
        )
        raise SystemExit(2)

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        setup_logging("admin")
        runtime = build_runtime("admin", settings, redis=True)
        assert runtime.redis is not None
        await ensure_shared_topics(settings)
        subscribe(
            runtime.broker,
            settings,
            runtime.topics.dead_letters,
            runtime.topics.group("admin-dlq"),
            dead_letters.processor(runtime.sessions, runtime.readiness),
            background=True,
        )
        await runtime.broker.start()
        rpc = RpcClient(runtime.broker, settings, "admin", background=True)
        await rpc.start(runtime.supervisor)
        outbox = Outbox("identity", runtime.broker)
        runtime.supervisor.start("identity-outbox-relay", lambda: outbox.relay_forever(runtime.sessions))
        app.state.update(
            settings=settings,
            runtime=runtime,
            engine=runtime.engine,
            sessions=runtime.sessions,
            redis=runtime.redis,
            broker=runtime.broker,
            rpc=rpc,
            outbox=outbox,
            operators=roster,
            signing=settings.signing_key("admin"),
            failures=FailureLimiter(runtime.redis, "admin", settings.auth_failure_limit_per_minute),
        )
        async with runtime.serving():
            yield
        await rpc.drop_reply_topic()

    return http_app("admin", settings, lifespan, [administer], build_document)

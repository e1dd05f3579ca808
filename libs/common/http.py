"""Litestar pieces the HTTP services (gateway, admin) share: request ids and the envelope."""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import msgspec
from litestar import Litestar, Request, Response, get
from litestar.datastructures import State
from litestar.exceptions import HTTPException, MethodNotAllowedException, NotFoundException
from litestar.handlers import HTTPRouteHandler
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from common.errors import ErrorCode, ServiceError, envelope
from common.ids import new_id
from common.logging import request_id_var
from common.tracing import exporting, start_request

log = logging.getLogger(__name__)

_SAFE_RID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


def request_id_middleware(app: ASGIApp) -> ASGIApp:
    """Bind a request id (the caller's ``X-Request-Id`` if sane) and echo it on every response."""

    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        rid = traceparent = None
        for k, v in scope["headers"]:
            if k == b"x-request-id" and rid is None:
                cand = v.decode("latin-1")
                rid = cand if _SAFE_RID.match(cand) else None
            elif k == b"traceparent":
                traceparent = v.decode("latin-1")
        rid = rid or new_id("req")
        start_request(rid, traceparent)  # the trace the request's messages carry (no span made)
        scope.setdefault("state", {})["request_id"] = rid
        token = request_id_var.set(rid)

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers.append((b"x-request-id", rid.encode()))
                message["headers"] = headers
            await send(message)

        try:
            await app(scope, receive, send_with_id)
        finally:
            request_id_var.reset(token)

    return middleware


def request_id_of(request: Request[Any, Any, Any]) -> str:
    return str(request.scope.get("state", {}).get("request_id") or request_id_var.get() or "")


def error_response(request: Request[Any, Any, Any], err: ServiceError) -> Response[Any]:
    details = {**err.details, "request_id": request_id_of(request)}
    headers = dict(err.headers)
    if err.code == ErrorCode.UNAUTHORIZED:
        headers.setdefault("WWW-Authenticate", "Bearer")
    return Response(envelope(err.code, err.message, details), status_code=err.status, headers=headers)


def service_error_handler(request: Request[Any, Any, Any], exc: ServiceError) -> Response[Any]:
    return error_response(request, exc)


def http_exception_handler(request: Request[Any, Any, Any], exc: HTTPException) -> Response[Any]:
    if isinstance(exc, NotFoundException):
        err = ServiceError(ErrorCode.NOT_FOUND, "no such route")
    elif isinstance(exc, MethodNotAllowedException):
        # RFC 9110 15.5.6: a 405 names the methods the resource supports (Litestar's router
        # puts them on the exception).
        allow = (exc.headers or {}).get("allow") or (exc.headers or {}).get("Allow") or ""
        err = ServiceError(
            ErrorCode.INVALID_REQUEST,
            "method not allowed for this route",
            status=405,
            headers={"Allow": allow} if allow else {},
        )
    elif exc.status_code == 413:
        err = ServiceError(ErrorCode.INVALID_REQUEST, "request body too large", status=413)
    elif exc.status_code == 415:
        err = ServiceError(ErrorCode.INVALID_REQUEST, "content type must be application/json", status=415)
    elif exc.status_code < 500:
        err = ServiceError(ErrorCode.INVALID_REQUEST, str(exc.detail), status=400)
    else:
        err = ServiceError(ErrorCode.INTERNAL_ERROR, "internal error")
    return error_response(request, err)


def internal_error_handler(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    log.exception("unhandled error", exc_info=exc)
    err = ServiceError(ErrorCode.INTERNAL_ERROR, "internal error; keep the request id for support")
    return error_response(request, err)


EXCEPTION_HANDLERS: dict[Any, Any] = {
    ServiceError: service_error_handler,
    HTTPException: http_exception_handler,
    Exception: internal_error_handler,
}


def http_metrics(service: str) -> Any:
    """Litestar's Prometheus middleware: ``sluice_http_requests_total`` and
    ``sluice_http_request_duration_seconds`` by method, route template and status."""
    from litestar.plugins.prometheus import PrometheusConfig

    return PrometheusConfig(
        app_name=service,
        prefix="sluice_http",
        group_path=True,
        exclude=["/metrics", "/healthz", "/readyz"],
    ).middleware


def http_tracing(service: str) -> Any:
    """Litestar's OpenTelemetry plugin: a server span per request, child of the caller's W3C
    ``traceparent`` when it sends one, so the commands the request publishes (and every
    consumer's work on them, see :mod:`common.tracing`) share the caller's trace."""
    from litestar.plugins.opentelemetry import OpenTelemetryConfig, OpenTelemetryPlugin

    from common.telemetry import tracer_provider

    return OpenTelemetryPlugin(
        OpenTelemetryConfig(
            tracer_provider=tracer_provider(service),
            exclude=["/metrics", "/healthz", "/readyz"],
            exclude_spans=["receive", "send"],
        )
    )


def openapi_routes(document: Callable[[], dict[str, Any]]) -> list[HTTPRouteHandler]:
    """``GET /schema/openapi.json`` (the service's own document) and the docs page at
    ``/schema`` and ``/docs`` (Redoc, served by the service itself from a pinned build, with a
    same-origin-only CSP: :mod:`common.docs_page`). The document is built once, on first
    request."""
    from common.docs_page import docs_routes

    cache: dict[str, Any] = {}

    def doc() -> dict[str, Any]:
        if "doc" not in cache:
            cache["doc"] = document()
            cache["json"] = msgspec.json.encode(cache["doc"])
        return cache

    @get("/schema/openapi.json", include_in_schema=False, name="openapi_json", sync_to_thread=False)
    def openapi_json() -> Response[bytes]:
        return Response(doc()["json"], media_type="application/json")

    return [openapi_json, *docs_routes(lambda: doc()["doc"]["info"]["title"])]


def health_routes(service: str) -> list[HTTPRouteHandler]:
    """``GET /healthz`` (the process answers) and ``GET /readyz`` (its stores, broker, consumers
    and supervised tasks, :func:`common.service.readyz`) of an HTTP service."""
    from common.service import readyz as readiness

    @get("/healthz", include_in_schema=False, sync_to_thread=False)
    def healthz() -> dict[str, str]:
        return {"status": "ok", "service": service}

    @get("/readyz", include_in_schema=False)
    async def readyz(state: State) -> Response[Any]:
        status, body = await readiness(state.runtime)
        return Response(body, status_code=status)

    return [healthz, readyz]


def success_json(description: str, headers: dict[str, Any]) -> dict[str, Any]:
    """An OpenAPI response object for the success envelope ``{"success": true, "data": ...}``."""
    schema = {
        "type": "object",
        "required": ["success", "data"],
        "properties": {"success": {"const": True}, "data": {}},
    }
    return {
        "description": description,
        "headers": headers,
        "content": {"application/json": {"schema": schema}},
    }


def http_app(
    service: str,
    settings: Any,
    lifespan: Callable[[Litestar], AbstractAsyncContextManager[None]],
    handlers: list[Any],
    document: Callable[[], dict[str, Any]],
    *,
    metrics_route: bool = True,
) -> Litestar:
    """The Litestar app of an HTTP service (gateway, admin), built one way: its ``handlers``
    beside ``/healthz``, ``/readyz``, ``/metrics`` and its OpenAPI ``document``; Prometheus
    metrics and OpenTelemetry spans per request; errors in the envelope; JSON logs owned by
    :mod:`common.logging`; and the request id outermost, so that even the router's own 404 and
    405 answers carry ``X-Request-Id``. Without ``metrics_route`` the app serves no ``/metrics``
    (the gateway serves them on a port of their own, :func:`serve_metrics`)."""
    from litestar.plugins.prometheus import PrometheusController

    metrics = [PrometheusController] if metrics_route else []
    app = Litestar(
        route_handlers=[*handlers, *health_routes(service), *metrics, *openapi_routes(document)],
        lifespan=[lifespan],
        middleware=[http_metrics(service)],
        plugins=[http_tracing(service)] if exporting() else [],
        exception_handlers=EXCEPTION_HANDLERS,
        request_max_body_size=settings.max_body_bytes,
        openapi_config=None,  # each service serves its own document (openapi_routes)
        logging_config=None,  # common.logging owns the handlers (JSON lines)
    )
    app.asgi_handler = request_id_middleware(app.asgi_handler)
    return app


@asynccontextmanager
async def serve_metrics(
    host: str, port: int, setting: str = "SLUICE_GATEWAY_METRICS_PORT"
) -> AsyncIterator[None]:
    """``GET /metrics`` (the default registry) on ``host:port``, in a thread of its own, for
    as long as the block runs: a service whose main port faces partners serves its metrics
    here instead: metrics are never served on the partner port (docs/operations.md, "Metrics").
    A port that is taken stops the start, naming ``setting`` (two gateways on one host each need
    their own)."""
    from prometheus_client import start_http_server

    try:
        server, thread = start_http_server(port, host)
    except OSError as exc:
        log.critical(
            "metrics port %s:%d cannot be served (%s): another process holds it; give this"
            " instance a port of its own with %s",
            host,
            port,
            exc.strerror or exc,
            setting,
        )
        raise
    log.info("metrics served on %s:%d", host, server.server_port)
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)

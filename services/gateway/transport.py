"""HTTP transport: decode the request, run the pipeline, encode the answer.

The direct form (one Litestar route per endpoint) and the routed form (``POST /`` with
``x-service-route``) both end in :func:`dispatch`, so their answers are the same bytes.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any
from urllib.parse import parse_qsl, unquote

import msgspec
from litestar import Request, Response
from litestar.datastructures import State

from common.clientaddr import client_address
from common.errors import ErrorCode, ServiceError
from common.http import request_id_of
from common.validation import check_numbers, not_json
from gateway.pipeline import Answer, Call, Endpoint, Incoming, Local, Pipeline, error_body

_PARAM = re.compile(r"\{(\w+)\}")
# Numbers with a fraction become Decimal: money and percentages never pass through float.
_json = msgspec.json.Decoder(float_hook=Decimal)


class Router:
    """Matches a (method, concrete path) to an endpoint, for the routed form."""

    def __init__(self, endpoints: list[Endpoint]) -> None:
        self.endpoints = endpoints
        self._compiled = [
            (ep, re.compile("^" + _PARAM.sub(r"(?P<\1>[^/]{1,512})", ep.path) + "$")) for ep in endpoints
        ]

    def match(self, method: str, path: str) -> tuple[Endpoint, dict[str, str]] | None:
        path = path.split("?", 1)[0].rstrip("/") or "/"
        allowed: list[str] = []
        for ep, rx in self._compiled:
            m = rx.match(path)
            if m:
                allowed.append(ep.method)
                if ep.method == method:
                    return ep, {k: unquote(v) for k, v in m.groupdict().items()}
        if allowed:
            raise ServiceError(
                ErrorCode.INVALID_REQUEST,
                f"method {method} not allowed for {path}",
                status=405,
                headers={"Allow": ", ".join(sorted(set(allowed)))},
            )
        return None


def client_ip(request: Request[Any, Any, State]) -> str | None:
    """The client address: the TCP peer, or what a trusted proxy forwarded (common.clientaddr)."""
    peer = request.client.host if request.client else None
    settings = request.app.state.settings
    return client_address(
        peer,
        lambda name: request.headers.getall(name, []),
        settings.trusted_networks,
        settings.client_ip_header,
    )


def _headers(request: Request[Any, Any, Any]) -> dict[str, str]:
    return {k.lower(): v for k, v in request.headers.items()}


def _check_json(request: Request[Any, Any, Any], raw: bytes, ep: Endpoint | None = None) -> Any:
    if (
        not raw.strip()
        and ep is not None
        and isinstance(ep.request, type)  # a union (gateway.schemas.UNIONS) always has fields
        and not msgspec.structs.fields(ep.request)
    ):
        return {}  # an endpoint without fields may be called without a body
    ctype = request.headers.get("content-type", "")
    if ctype.split(";")[0].strip().lower() != "application/json":
        raise ServiceError(
            ErrorCode.INVALID_REQUEST,
            "Content-Type must be application/json",
            status=415,
            details={"field": "Content-Type"},
        )
    try:
        doc = _json.decode(raw)
    except msgspec.DecodeError:
        raise not_json(raw, "body") from None
    except RecursionError:
        raise ServiceError(
            ErrorCode.INVALID_REQUEST, "request body is nested too deeply", details={"field": "body"}
        ) from None
    check_numbers(doc)  # bounded numbers everywhere, before any route sees them
    return doc


def to_response(answer: Answer) -> Response[bytes]:
    return Response(
        content=answer.body, status_code=answer.status, headers=answer.headers, media_type="application/json"
    )


async def _read(request: Request[Any, Any, Any], limit: int) -> bytes:
    length = request.headers.get("content-length")
    if length and length.isdigit() and int(length) > limit:
        raise ServiceError(ErrorCode.INVALID_REQUEST, f"request body over {limit} bytes", status=413)
    raw = await request.body()
    if len(raw) > limit:
        raise ServiceError(ErrorCode.INVALID_REQUEST, f"request body over {limit} bytes", status=413)
    return raw


async def dispatch(
    request: Request[Any, Any, State],
    ep: Endpoint,
    params: dict[str, str],
    raw: bytes,
    body: Any,
    query: dict[str, str],
) -> Response[bytes]:
    pipeline: Pipeline = request.app.state.pipeline
    req = Incoming(_headers(request), raw, body, params, query, request_id_of(request), client_ip(request))
    answer = await pipeline.handle(ep, req)
    return to_response(answer)


async def direct(request: Request[Any, Any, State], ep: Endpoint) -> Response[bytes]:
    rid = request_id_of(request)
    try:
        body: Any = None
        raw = b""
        if ep.method in ("POST", "PATCH", "PUT"):
            raw = await _read(request, request.app.state.settings.max_body_bytes)
            body = _check_json(request, raw, ep)
    except ServiceError as err:
        return to_response(Answer(err.status, error_body(err, rid), dict(err.headers)))
    query = dict(request.query_params.items()) if not ep.mutating else {}
    return await dispatch(request, ep, dict(request.path_params), raw, body, query)


async def routed(request: Request[Any, Any, State]) -> Response[bytes]:
    """``POST /`` with ``x-service-route``; the body is the payload, or ``{"method": "GET"}``
    for reads (a list's query string rides in the route: ``/v1/customers?limit=5``); a change or
    a deletion names its method beside the payload (``{"method": "PATCH", ...}``)."""
    rid = request_id_of(request)
    router: Router = request.app.state.router
    try:
        raw = await _read(request, request.app.state.settings.max_body_bytes)
        body = _check_json(request, raw)
    except ServiceError as err:
        return to_response(Answer(err.status, error_body(err, rid), dict(err.headers)))
    try:
        route = request.headers.get("x-service-route")
        if not route:
            raise ServiceError(
                ErrorCode.INVALID_REQUEST,
                "the x-service-route header is required",
                details={"field": "x-service-route"},
            )
        path, _, qs = route.partition("?")
        method = "POST"
        if isinstance(body, dict) and "method" in body:
            if not isinstance(body["method"], str) or body["method"].upper() not in ROUTED_METHODS:
                raise ServiceError(
                    ErrorCode.INVALID_REQUEST,
                    "method must be one of " + ", ".join(ROUTED_METHODS),
                    details={"field": "method"},
                )
            method = body["method"].upper()
            body = {k: v for k, v in body.items() if k != "method"}
        found = router.match(method, path)
        if found is None:
            raise ServiceError(ErrorCode.NOT_FOUND, "no such route")
        ep, params = found
        query: dict[str, str] = {}
        if not ep.mutating:
            if body:
                field = next(iter(body))
                raise ServiceError(
                    ErrorCode.INVALID_REQUEST,
                    f"a routed {method} carries only method; {field!r} is unknown",
                    details={"field": str(field)[:100]},
                )
            raw, body = b"", None
            query = dict(parse_qsl(qs, keep_blank_values=True))
    except ServiceError as err:
        if err.status in (400, 404, 405):
            # A missing or unknown route is refused after the credential is checked, as a
            # direct request to an endpoint would be: 401 comes before 400 and 404.
            return await dispatch(request, _refusal(err), {}, b"", None, {})
        return to_response(Answer(err.status, error_body(err, rid), dict(err.headers)))
    return await dispatch(request, ep, params, raw, body, query)


def _refusal(err: ServiceError) -> Endpoint:
    """A read-like endpoint that refuses with ``err`` once the pipeline has authenticated."""

    def build(call: Call) -> Local:
        raise err

    return Endpoint("GET", "/", None, build)


# What a routed body's ``method`` may name (absent: POST): every method of the endpoint table.
ROUTED_METHODS = ("GET", "POST", "PATCH", "DELETE")

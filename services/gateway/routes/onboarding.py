"""Onboarding authorizations and the public signup screen (docs/guides/money.md, "Onboarding a
customer through a signup link").

``ENDPOINTS``: ``POST /v1/onboarding-authorizations`` through the pipeline (both access forms).
``PAGES``: the public screen ``GET``/``POST /onboarding/{token}`` (no API key: the signed,
single-use token in the path is the authority).
"""

from __future__ import annotations

from typing import Any

from litestar import Request, Response, get, post
from litestar.datastructures import State

from common.clientaddr import client_key
from common.errors import ServiceError
from common.http import request_id_of
from gateway.onboarding import signup
from gateway.onboarding.links import OnboardingAuthorization, OnboardingAuthorizationCreate, build_create
from gateway.onboarding.pages import too_many
from gateway.pipeline import Endpoint
from gateway.transport import client_ip


async def throttled(request: Request[Any, Any, State], state: State) -> Response[str] | None:
    """The public pages carry no API key, so they are limited per client IP (fixed one-minute
    windows in Redis, shared by all gateways): token guessing and form flooding get 429."""
    who = client_key(client_ip(request))  # an IPv6 client by its /64, as every per-client limit
    limit = state.settings.onboarding_rate_limit_per_minute
    try:
        await state.pipeline.limiter.hit(f"ip:{who}", "onboarding", limit)
    except ServiceError as err:
        return too_many(err.headers.get("Retry-After", "60"))
    return None


@get("/onboarding/{token:str}", include_in_schema=False, name="onboarding_page")
async def onboarding_page(request: Request[Any, Any, State], token: str, state: State) -> Response[str]:
    return await throttled(request, state) or await signup.show(state, token)


@post("/onboarding/{token:str}", include_in_schema=False, name="onboarding_submit", status_code=200)
async def onboarding_submit(request: Request[Any, Any, State], token: str, state: State) -> Response[str]:
    if (refused := await throttled(request, state)) is not None:
        return refused
    form = await request.form()
    values = {k: str(form.get(k) or "") for k in signup.FIELDS}
    return await signup.submit(state, token, values, request_id_of(request))


ENDPOINTS: list[Endpoint] = [
    Endpoint(
        "POST",
        "/v1/onboarding-authorizations",
        "onboarding:write",
        build_create,
        None,
        summary="Issue a signed, short-lived, single-use signup link for an end user",
        request=OnboardingAuthorizationCreate,
        response=OnboardingAuthorization,
        status=201,
    ),
]
PAGES: list[Any] = [onboarding_page, onboarding_submit]

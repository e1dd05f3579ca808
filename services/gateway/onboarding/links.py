"""Onboarding authorizations: ``POST /v1/onboarding-authorizations`` and the link's token.

The token is an HS256 JWT (PyJWT, already used for access tokens) signed with
``SLUICE_ONBOARDING_SECRET`` and an audience of its own, so neither an access
token nor any other signed value can pass for it. It names the authorization and its
expiry only; what the link may do (tenant, mode, end user) lives in ``gateway``'s table,
which also records the single use.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal

import jwt
import msgspec

from common.db import transaction
from common.errors import invalid
from common.ids import new_id
from common.settings import Settings
from common.times import iso
from gateway.onboarding import repository as repo
from gateway.openapi.rules import REDIRECT_URL
from gateway.pipeline import Call, Local
from gateway.routes.base import body_of
from gateway.schemas import Email, Text

AUDIENCE = "sluice:onboarding"
_REDIRECT = re.compile(REDIRECT_URL)
Url = Annotated[str, msgspec.Meta(min_length=8, max_length=2048)]


class OnboardingAuthorizationCreate(msgspec.Struct, forbid_unknown_fields=True):
    service_user_id: Text
    email: Email | None = None
    account_type: Literal["individual", "business"] | None = None
    redirect_url: Url | None = None
    expires_in_seconds: Annotated[int, msgspec.Meta(ge=60, le=3600)] = 900


class OnboardingAuthorization(msgspec.Struct):
    authorization_id: str
    url: str
    expires_at: str


def check_redirect(url: str) -> str:
    """HTTPS to a DNS name, or plain HTTP to a loopback host (as OAuth allows native apps, RFC
    8252): exactly what the OpenAPI document's pattern says (``openapi_rules.REDIRECT_URL``), so
    the schema and the check never disagree. The URL later becomes a ``Location`` header: the
    pattern admits no user info, no space or control character, and a port of 0-65535 only
    (``urlsplit`` raised on a lone ``]``, found by the fuzzer: a 500, before)."""
    if _REDIRECT.fullmatch(url) is None:
        raise invalid(
            "redirect_url",
            "redirect_url must be an https:// URL to a DNS name (http only for loopback), with no"
            " user info, spaces or control characters",
        )
    return url


def sign(settings: Settings, authorization_id: str, expires_at: datetime) -> str:
    claims = {
        "iss": settings.jwt_issuer,
        "aud": AUDIENCE,
        "sub": authorization_id,
        "exp": int(expires_at.timestamp()),
    }
    return jwt.encode(claims, settings.onboarding_key, algorithm="HS256")


def verify(settings: Settings, token: str) -> str | None:
    """The authorization id of an authentic, unexpired token; None otherwise."""
    if len(token) > 1024:
        return None
    try:
        claims = jwt.decode(
            token,
            settings.onboarding_key,
            algorithms=["HS256"],
            audience=AUDIENCE,
            issuer=settings.jwt_issuer,
            options={"require": ["exp", "sub", "aud", "iss"]},
        )
    except jwt.InvalidTokenError:
        return None
    sub = claims.get("sub")
    return sub if isinstance(sub, str) else None


def link_of(settings: Settings, row: Any) -> dict[str, Any]:
    token = sign(settings, row.id, row.expires_at)
    return {
        "authorization_id": row.id,
        "url": f"{settings.public_base_url.rstrip('/')}/onboarding/{token}",
        "expires_at": iso(row.expires_at),
    }


async def build_create(call: Call) -> Local:
    p = body_of(call, OnboardingAuthorizationCreate)
    if p.redirect_url is not None:
        check_redirect(p.redirect_url)
    expires_at = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=p.expires_in_seconds)
    async with transaction(call.sessions) as session:
        row = await repo.insert_authorization(
            session,
            {
                "id": new_id("onb"),
                "tenant_id": call.ctx.tenant_id,
                "mode": call.ctx.mode,
                "idempotency_key": call.ctx.idempotency_key,
                "request_id": call.request_id,
                "service_user_id": p.service_user_id,
                "email": p.email,
                "account_type": p.account_type,
                "redirect_url": p.redirect_url,
                "expires_at": expires_at,
            },
        )
    return Local(201, link_of(call.settings, row))

"""Rendering the signup screen: Mako templates with HTML escaping of every value, and a
Content-Security-Policy that allows no script at all.

Why Mako: it is already installed (Alembic's templating) and escapes every expression with
``default_filters=["h"]``; Litestar's template engines would need Jinja2, which is not kept.
Colours reach CSS only after :func:`common.contracts.branding.valid_white_label` accepted
them (``^#[0-9A-F]{6}$``); the one ``<style>`` element carries a per-response nonce.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from litestar import Response
from mako.lookup import TemplateLookup

from common.contracts.branding import WhiteLabel, valid_white_label

TEMPLATES = TemplateLookup(
    directories=[str(Path(__file__).parent / "templates" / "onboarding")],
    default_filters=["h"],
    strict_undefined=True,
    input_encoding="utf-8",
)
DEFAULT_NAME = "Account signup"
DEFAULT_PRIMARY = "#24292F"
DEFAULT_ACCENT = "#0969DA"


@dataclass
class Page:
    title: str
    brand: WhiteLabel | None = None
    nonce: str = field(default_factory=lambda: secrets.token_urlsafe(18))
    action: str = ""
    account_type: str | None = None
    values: dict[str, str] = field(default_factory=dict)
    error: str | None = None
    heading: str = ""
    message: str = ""
    tone: str = "ok"
    reference: str | None = None
    form_targets: list[str] = field(default_factory=list)

    @property
    def app_name(self) -> str:
        return (self.brand.app_name if self.brand and self.brand.app_name else None) or DEFAULT_NAME

    @property
    def primary(self) -> str:
        return (self.brand.primary_color if self.brand else None) or DEFAULT_PRIMARY

    @property
    def accent(self) -> str:
        return (self.brand.accent_color if self.brand else None) or DEFAULT_ACCENT


def branding(tenant: Any) -> WhiteLabel | None:
    """The tenant's branding only if an operator approved it and it still validates."""
    if tenant is None or tenant.branding_approved_at is None or not isinstance(tenant.metadata, dict):
        return None
    return valid_white_label(tenant.metadata.get("white_label"))


_HOST = re.compile(r"^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")


def origin_of(url: str | None) -> str | None:
    """The ``scheme://host[:port]`` of ``url``, rebuilt from its parsed parts, for a CSP source:
    only http(s), a host of DNS labels (IDNA-encoded), a numeric port; no user info. Anything
    else gives None (the form then posts to 'self' only), so no character of the URL can reach
    the header unchecked."""
    if not url:
        return None
    try:
        parts = urlsplit(url)
        port = parts.port
        host = (parts.hostname or "").encode("idna").decode("ascii")
    except (ValueError, UnicodeError):
        return None
    if parts.scheme not in ("http", "https") or "@" in parts.netloc or not _HOST.match(host):
        return None
    return f"{parts.scheme}://{host}" + (f":{port}" if port is not None else "")


def _csp(page: Page) -> str:
    form_action = " ".join(["'self'", *page.form_targets])
    return (
        "default-src 'none'; script-src 'none'; img-src https:; "
        f"style-src 'nonce-{page.nonce}'; form-action {form_action}; "
        "frame-ancestors 'none'; base-uri 'none'"
    )


def headers_for(page: Page) -> dict[str, str]:
    return {
        "Content-Security-Policy": _csp(page),
        "Cache-Control": "no-store",
        "Referrer-Policy": "no-referrer",
        "X-Content-Type-Options": "nosniff",
        "X-Frame-Options": "DENY",
    }


def render(template: str, page: Page, status: int) -> Response[str]:
    html = TEMPLATES.get_template(template).render(page=page)
    return Response(
        html, status_code=status, media_type="text/html; charset=utf-8", headers=headers_for(page)
    )


def gone(reason: str) -> Response[str]:
    page = Page(
        title="Link no longer valid",
        heading="This signup link can no longer be used",
        message=reason,
        tone="error",
    )
    return render("message.mako", page, 410)


def too_many(retry_after: str) -> Response[str]:
    page = Page(
        title="Too many attempts",
        heading="Too many attempts from your network",
        message="Please wait a minute, then reload this page.",
        tone="error",
    )
    response = render("message.mako", page, 429)
    response.headers["Retry-After"] = retry_after
    return response

"""The API reference page (``/docs``) that loads nothing from another origin
(docs/reference/index.md).

The renderer is Redoc's standalone bundle from the npm package pinned in
``static/redoc.json`` (version and the registry's tarball integrity), vendored beside this
module by ``make redoc`` and served by the service itself at a versioned path; the page's own
start-up script is a static file too. The page's Content-Security-Policy allows the service's
own origin only: scripts from ``'self'``; styles from ``'self'`` plus a nonce fresh on every
answer, which Redoc hands to the styles it injects (styled-components), and two style
attributes by hash; the search index's worker from a ``blob:`` URL (a blob URL has the page's
origin and only the page's own scripts can make one); nothing to frame it, no plugin, no base
or form target. Redoc's sidebar shows the Redocly logo from ``cdn.redoc.ly``: the policy
refuses it (``img-src``), so the browser never asks that origin. The OpenAPI document is fetched from
``/schema/openapi.json`` (same origin) instead of being inlined into the page.
"""

from __future__ import annotations

import hashlib
import html
import json
import secrets
from functools import cache
from pathlib import Path
from typing import Any

from litestar import Response, get
from litestar.handlers import HTTPRouteHandler

STATIC = Path(__file__).parent / "static"
MANIFEST = STATIC / "redoc.json"

# Reads the spec URL from the page, and the nonce from its own <script> element (the browser
# exposes it to the script, never to CSS selectors), and starts Redoc with it.
INIT_JS = b"""(function () {
  "use strict";
  var el = document.getElementById("redoc");
  var nonce = document.currentScript ? document.currentScript.nonce : undefined;
  window.Redoc.init(el.getAttribute("data-spec-url"), { nonce: nonce, expandResponses: "" }, el);
})();
"""


@cache
def manifest() -> dict[str, str]:
    data: dict[str, str] = json.loads(MANIFEST.read_text())
    return data


@cache
def bundle() -> bytes:
    """The vendored bundle, refused when it is not the pinned one."""
    raw = (STATIC / manifest()["file"]).read_bytes()
    if hashlib.sha256(raw).hexdigest() != manifest()["sha256"]:
        raise RuntimeError("static/redoc.standalone.js is not the pinned build: run `make redoc`")
    return raw


def bundle_path() -> str:
    return f"/docs/assets/redoc-{manifest()['version']}.standalone.js"


def csp(nonce: str) -> str:
    return "; ".join(
        [
            "default-src 'self'",
            "script-src 'self'",
            f"style-src 'self' 'nonce-{nonce}' 'unsafe-hashes' {STYLE_ATTRIBUTE_HASHES}",
            "img-src 'self' data:",
            "font-src 'self'",
            "connect-src 'self'",
            "worker-src 'self' blob:",
            "object-src 'none'",
            "base-uri 'none'",
            "form-action 'none'",
            "frame-ancestors 'none'",
        ]
    )


def page(title: str, nonce: str) -> bytes:
    t = html.escape(title)
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{t}</title>
<style nonce="{nonce}">body {{ margin: 0; padding: 0; }}</style>
</head>
<body>
<div id="redoc" data-spec-url="/schema/openapi.json"></div>
<script src="{bundle_path()}" nonce="{nonce}"></script>
<script src="/docs/assets/init.js" nonce="{nonce}"></script>
</body>
</html>
""".encode()


# The two style attributes Redoc 2.5.4 sets (an empty one and its sidebar's), allowed by hash
# and by nothing else; Chromium names the hash of any other it refuses.
STYLE_ATTRIBUTE_HASHES = "'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=' " + (
    "'sha256-QMIg+bpjm3JdElJ388KYke01izlUW0UoNOeKjpMxdgc='"
)
_ASSET_HEADERS = {"X-Content-Type-Options": "nosniff", "Cache-Control": "public, max-age=31536000, immutable"}


def docs_routes(title: Any) -> list[HTTPRouteHandler]:
    """``/docs`` and ``/schema`` (the page), its two scripts; ``title`` gives the page's title."""

    @get(["/schema", "/docs"], include_in_schema=False, name="openapi_docs", sync_to_thread=False)
    def docs_page() -> Response[bytes]:
        nonce = secrets.token_urlsafe(16)
        headers = {
            "Content-Security-Policy": csp(nonce),
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer",
            "Cache-Control": "no-store",
        }
        return Response(page(str(title()), nonce), media_type="text/html", headers=headers)

    @get(bundle_path(), include_in_schema=False, name="docs_bundle", sync_to_thread=False)
    def docs_bundle() -> Response[bytes]:
        return Response(bundle(), media_type="text/javascript", headers=_ASSET_HEADERS)

    @get("/docs/assets/init.js", include_in_schema=False, name="docs_init", sync_to_thread=False)
    def docs_init() -> Response[bytes]:
        headers = {**_ASSET_HEADERS, "Cache-Control": "no-cache"}
        return Response(INIT_JS, media_type="text/javascript", headers=headers)

    return [docs_page, docs_bundle, docs_init]

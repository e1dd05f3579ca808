"""MkDocs hook of the documentation site (mkdocs.yml, issue 46): the API reference, offline.

Adds three files to the site under ``reference/``, as generated files (so ``mkdocs serve``
has them too and strict mode checks the links to them): Redoc's standalone build as the
gateway vendors it (``common.docs_page``, refused unless it is the pinned build), the
gateway's OpenAPI document as the SDKs are generated from it (``clients/openapi.json``, kept
equal to the gateway's by tests/unit/test_clients_drift.py), and ``api.html``, the page that
renders one with the other. Nothing is loaded from another origin: the page's policy allows
its own origin only, so the Redocly logo in Redoc's sidebar is refused before it is asked for.
"""

from __future__ import annotations

import html
import sys
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "libs") not in sys.path:  # `mkdocs build` run without make's PYTHONPATH
    sys.path.insert(0, str(ROOT / "libs"))

from common import docs_page  # noqa: E402

OPENAPI = ROOT / "clients" / "openapi.json"
TITLE = "Sluice Partner Payments API reference"
# A static page has no per-answer nonce: Redoc's injected styles need 'unsafe-inline' here
# (the page shows no input of anyone's). Scripts, data and images: this origin only.
POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "font-src 'self'",
        "connect-src 'self'",
        "worker-src 'self' blob:",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'none'",
    ]
)


def bundle_name() -> str:
    return f"redoc-{docs_page.manifest()['version']}.standalone.js"


def api_page() -> str:
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="{POLICY}">
<title>{html.escape(TITLE)}</title>
<style>body {{ margin: 0; padding: 0; }}</style>
</head>
<body>
<div id="redoc" data-spec-url="openapi.json"></div>
<script src="assets/{bundle_name()}"></script>
<script src="assets/init.js"></script>
</body>
</html>
"""


def on_files(files: Files, config: Any) -> Files:
    generated = {
        "reference/api.html": api_page().encode(),
        "reference/openapi.json": OPENAPI.read_bytes(),
        f"reference/assets/{bundle_name()}": docs_page.bundle(),
        "reference/assets/init.js": docs_page.INIT_JS,
    }
    for path, content in generated.items():
        files.append(File.generated(config, path, content=content))
    return files

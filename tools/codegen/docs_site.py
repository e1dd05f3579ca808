"""MkDocs hook of the documentation site (mkdocs.yml): the API reference, offline.

Adds these files to the site under ``reference/``, as generated files (so ``mkdocs serve``
has them too and strict mode checks the links to them): Redoc's standalone build as the
gateway vendors it (``common.docs_page``, refused unless it is the pinned build), the
gateway's OpenAPI document as the SDKs are generated from it (``clients/openapi.json``, kept
equal to the gateway's by tests/unit/test_clients_drift.py), the document as the page renders
it (``tools.codegen.reference``: code samples, every schema, a way back to the guides) as a
script, and ``api.html``, the page that renders it. The rendered document is a script that
sets a variable, not a JSON file Redoc fetches: opened from disk (file://) a fetch is refused
and Redoc's loader fails ("process is not defined"), while a script loads. Nothing is loaded
from another origin: the page's policy allows its own origin only, so the Redocly logo in
Redoc's sidebar is refused before it is asked for.

And the settings reference: on the page that holds :data:`SETTINGS_MARKER`, a table of every
field of ``common.settings.Settings`` (its variable, default and the comment written above it
in ``libs/common/settings.py``), so the page cannot fall behind the code.
"""

from __future__ import annotations

import ast
import html
import io
import json
import sys
import tokenize
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
for _path in (ROOT / "libs", ROOT):  # `mkdocs build` run without make's PYTHONPATH
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from common import docs_page  # noqa: E402
from common.settings import Settings  # noqa: E402
from tools.codegen import reference  # noqa: E402

SETTINGS_SOURCE = ROOT / "libs" / "common" / "settings.py"
SETTINGS_MARKER = "<!-- settings reference: generated from libs/common/settings.py -->"

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
<div id="redoc"></div>
<script src="openapi.js"></script>
<script src="assets/{bundle_name()}"></script>
<script src="assets/init.js"></script>
</body>
</html>
"""


# Starts Redoc on the rendered document that openapi.js sets (no fetch: see the docstring).
INIT_JS = b"""(function () {
  "use strict";
  window.Redoc.init(window.SLUICE_REFERENCE, { expandResponses: "" }, document.getElementById("redoc"));
})();
"""


def reference_script() -> bytes:
    rendered = reference.rendered(json.loads(OPENAPI.read_text()))
    return b"window.SLUICE_REFERENCE = " + json.dumps(rendered, ensure_ascii=True).encode() + b";\n"


def on_files(files: Files, config: Any) -> Files:
    generated = {
        "reference/api.html": api_page().encode(),
        "reference/openapi.json": OPENAPI.read_bytes(),
        "reference/openapi.js": reference_script(),
        f"reference/assets/{bundle_name()}": docs_page.bundle(),
        "reference/assets/init.js": INIT_JS,
    }
    for path, content in generated.items():
        files.append(File.generated(config, path, content=content))
    return files


def on_post_build(config: Any) -> None:
    """The search index as a script too: opened from disk (file://) the theme loads
    ``search/search_index.js`` (a fetch of the JSON is refused there) and reads ``__index``;
    docs/assets/file-worker.js runs the search worker from disk. What Material's offline plugin
    does, without the script it adds from a CDN."""
    index = Path(config["site_dir"]) / "search" / "search_index.json"
    if index.exists():
        index.with_suffix(".js").write_text(
            "var __index = " + index.read_text(encoding="utf-8"), encoding="utf-8"
        )


def _comments(source: str) -> dict[int, str]:
    """Line number -> the comment on that line."""
    found: dict[int, str] = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            found[tok.start[0]] = tok.string.lstrip("#").strip()
    return found


def _default(name: str) -> str:
    field = Settings.model_fields[name]
    if field.default_factory is not None:
        return "(computed)"
    value = field.default
    if hasattr(value, "get_secret_value"):
        return "(secret)" if value.get_secret_value() else "(none)"
    if isinstance(value, str):
        return f"`{value}`" if value else "(empty)"
    return f"`{value}`"


def settings_reference() -> str:
    """A Markdown table of every setting: ``SLUICE_<NAME>``, its default, the comment above it
    (and on its line) in settings.py; a comment heads the group of fields that follows it."""
    source = SETTINGS_SOURCE.read_text()
    lines = source.splitlines()
    comments = _comments(source)
    tree = ast.parse(source)
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Settings")
    rows = ["| setting | default | notes |", "|---|---|---|"]
    for node in cls.body:
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        name = node.target.id
        above: list[str] = []
        n = node.lineno - 1
        while n >= 1 and lines[n - 1].strip().startswith("#"):
            above.insert(0, comments[n])
            n -= 1
        inline = comments.get(node.lineno)
        notes = " ".join([*above, *([inline] if inline else [])]).replace("|", "\\|")
        rows.append(f"| `SLUICE_{name.upper()}` | {_default(name)} | {notes} |")
    return "\n".join(rows) + "\n"


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    if SETTINGS_MARKER in markdown:
        return markdown.replace(SETTINGS_MARKER, settings_reference())
    return markdown

"""The OpenAPI document as the documentation site's API reference renders it (docs/reference).

The gateway's document (``clients/openapi.json``) with what only the rendered page needs, so
the document the SDKs are generated from and the gateway serves stays as it is:

- ``x-codeSamples`` on every operation, a Python, a TypeScript and a curl sample, each cut from
  an example script that calls every operation once and that the tests run against the stack
  (tests/integration/test_reference_samples.py): the lines between ``[<operationId>]`` and
  ``[end]`` comments. An operation without a sample in every language is an error, so the
  reference cannot lose one silently.
- every schema under its own entry: a tag per schema whose description is Redoc's
  ``<SchemaDefinition>``, grouped (``x-tagGroups``) after the operations' tags;
- a description that leads back to the guides and names nothing of the repository;
- a title on each alternative of a request body's cross-field rules (``anyOf`` of objects),
  from what tells them apart (``symbol USDC; chain BASE, ETH``): without one Redoc names each
  after the body (``TransferCreate | TransferCreate``). A title changes no validation.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

from common.validation import END

ROOT = Path(__file__).resolve().parents[2]
# (Redoc's language, the label shown, the script, its comment mark)
SAMPLES = (
    ("Python", "Python", ROOT / "clients" / "python" / "examples" / "reference.py", "#"),
    ("TypeScript", "TypeScript", ROOT / "clients" / "typescript" / "examples" / "reference.ts", "//"),
    ("Shell", "curl", ROOT / "clients" / "curl" / "reference.sh", "#"),
)
METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
GUIDES = (
    "\n\nThe guides: [idempotency and retries](../guides/idempotency.html), "
    "[errors](../guides/errors.html), [webhooks](../guides/webhooks.html), "
    "[money movement](../guides/money.html), [the SDKs](../sdks/index.html) and "
    "[installing them](../sdks/install.html). [Back to the documentation](../index.html)."
)


def regions(text: str, mark: str) -> dict[str, str]:
    """``operationId`` -> the lines between ``<mark> [operationId]`` and ``<mark> [end]``."""
    found: dict[str, str] = {}
    opening = re.compile(rf"^{re.escape(mark)} \[([A-Za-z0-9_]+)\]$")
    name: str | None = None
    lines: list[str] = []
    for line in text.splitlines():
        if name is None:
            hit = opening.match(line.strip())
            if hit and hit.group(1) != "end":
                name, lines = hit.group(1), []
        elif line.strip() == f"{mark} [end]":
            if name in found:
                raise ValueError(f"two samples for {name}")
            found[name] = "\n".join(lines).rstrip() + "\n"
            name = None
        else:
            lines.append(line)
    if name is not None:
        raise ValueError(f"the sample for {name} has no end")
    return found


def operations(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [op for item in doc["paths"].values() for method, op in item.items() if method in METHODS]


def code_samples(doc: dict[str, Any]) -> dict[str, list[dict[str, str]]]:
    """``operationId`` -> its samples, one per language, in SAMPLES' order."""
    per_language = [(lang, label, regions(path.read_text(), mark)) for lang, label, path, mark in SAMPLES]
    out: dict[str, list[dict[str, str]]] = {}
    for op in operations(doc):
        op_id = op["operationId"]
        missing = [label for _, label, found in per_language if op_id not in found]
        if missing:
            raise ValueError(f"{op_id} has no {' or '.join(missing)} sample in the example scripts")
        out[op_id] = [
            {"lang": lang, "label": label, "source": found[op_id]} for lang, label, found in per_language
        ]
    known = {op["operationId"] for op in operations(doc)}
    for _, label, found in per_language:
        if unknown := set(found) - known:
            raise ValueError(f"{label} samples for operations the document does not have: {sorted(unknown)}")
    return out


def _words(pattern: str) -> set[str]:
    """The words a pattern such as ``^([Uu][Ss][Dd][Cc]|[Ee][Tt][Hh])$(?!\\n)`` allows
    (case-insensitive alternatives, common.validation.ci_pattern), else nothing."""
    hit = re.fullmatch(r"\^\((.*)\)" + re.escape(END), pattern)
    if not hit:
        return set()
    words = [re.sub(r"\[(\w)\w\]", lambda m: m.group(1).upper(), alt) for alt in hit.group(1).split("|")]
    return set(words) if all(re.fullmatch(r"[\w.]+", w) for w in words) else set()


def _literals(node: Any, path: str, out: dict[str, set[str]]) -> dict[str, set[str]]:
    """Field path -> the literal values (const, or a pattern's words) a schema allows there."""
    if not isinstance(node, dict):
        return out
    if "const" in node:
        out.setdefault(path, set()).add(str(node["const"]))
    if isinstance(node.get("pattern"), str) and (words := _words(node["pattern"])):
        out.setdefault(path, set()).update(words)
    for name, sub in node.get("properties", {}).items():
        _literals(sub, f"{path}.{name}" if path else name, out)
    for key in ("allOf", "anyOf", "oneOf"):
        for sub in node.get(key, []):
            _literals(sub, path, out)
    return out


def _title_alternatives(node: Any) -> None:
    """Titles on every ``anyOf`` of objects under ``node`` that has none (see the docstring)."""
    if isinstance(node, list):
        for sub in node:
            _title_alternatives(sub)
        return
    if not isinstance(node, dict):
        return
    branches: list[Any] = node.get("anyOf") or []
    objects = all(isinstance(b, dict) and "properties" in b for b in branches)
    if objects and len(branches) > 1 and not any("title" in b for b in branches):
        found = [_literals(b, "", {}) for b in branches]
        paths = list(dict.fromkeys(p for f in found for p in f))
        apart = [p for p in paths if len({frozenset(f.get(p, ())) for f in found}) > 1]
        for k in range(1, len(apart) + 2):  # the fewest fields that tell every alternative apart
            titles = [
                "; ".join(f"{p} {', '.join(sorted(lits[p]))}" for p in apart[:k] if p in lits)
                or "with " + ", ".join(b.get("required", []))
                for b, lits in zip(branches, found, strict=True)
            ]
            if len(set(titles)) == len(titles):
                break
        for branch, title in zip(branches, titles, strict=True):
            branch["title"] = title
    for value in node.values():
        _title_alternatives(value)


def rendered(doc: dict[str, Any]) -> dict[str, Any]:
    """The document the reference page renders (see the module's docstring)."""
    out = copy.deepcopy(doc)
    samples = code_samples(out)
    for op in operations(out):
        op["x-codeSamples"] = samples[op["operationId"]]
        body = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {})
        _title_alternatives(body.get("allOf", [])[1:])  # the rules beside the body's own schema
    description = re.sub(r"\s*See [^.]*\bREADME\.md\b[^.]*\.", "", out["info"].get("description", ""))
    out["info"]["description"] = description.strip() + GUIDES
    used = list(dict.fromkeys(t for op in operations(out) for t in op.get("tags", [])))
    tags = {t["name"]: t for t in out.get("tags", [])}
    out["tags"] = [tags.get(name, {"name": name}) for name in used]
    schemas = sorted(out.get("components", {}).get("schemas", {}))
    for name in schemas:
        out["tags"].append(
            {
                "name": f"schema-{name}",
                "x-displayName": name,
                "description": f'<SchemaDefinition schemaRef="#/components/schemas/{name}" />',
            }
        )
    out["x-tagGroups"] = [
        {"name": "Operations", "tags": used},
        {"name": "Schemas", "tags": [f"schema-{name}" for name in schemas]},
    ]
    return out

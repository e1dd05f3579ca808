"""The document the site's API reference renders (tools/codegen/reference.py): every operation
with a Python, a TypeScript and a curl sample cut from the example scripts that
tests/integration/test_reference_samples.py runs, every schema under its own entry, a way
back to the guides, nothing of the repository named; and nothing else of the gateway's
document changed."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from tests.unit.test_docs_links import REPOSITORY
from tools.codegen import reference

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[2]


def _doc() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((ROOT / "clients" / "openapi.json").read_text())
    return data


def _strings(node: Any) -> list[str]:
    if isinstance(node, dict):
        return [s for v in node.values() for s in _strings(v)]
    if isinstance(node, list):
        return [s for v in node for s in _strings(v)]
    return [node] if isinstance(node, str) else []


def test_every_operation_has_a_sample_in_each_language() -> None:
    out = reference.rendered(_doc())
    ops = reference.operations(out)
    assert len(ops) == len(reference.operations(_doc())) >= 29
    for op in ops:
        samples = op["x-codeSamples"]
        assert [s["label"] for s in samples] == ["Python", "TypeScript", "curl"], op["operationId"]
        assert all(s["source"].strip() for s in samples), op["operationId"]
    sample = {s["label"]: s["source"] for s in reference.operations(out)[0]["x-codeSamples"]}
    assert "[end]" not in "".join(sample.values())


def test_every_schema_is_an_entry_and_every_tag_is_grouped() -> None:
    doc = _doc()
    out = reference.rendered(doc)
    groups = {g["name"]: g["tags"] for g in out["x-tagGroups"]}
    assert groups["Schemas"] == [f"schema-{n}" for n in sorted(doc["components"]["schemas"])]
    used = {t for op in reference.operations(doc) for t in op.get("tags", [])}
    assert set(groups["Operations"]) == used  # Redoc hides an operation whose tag is in no group
    entries = {t["name"]: t for t in out["tags"]}
    assert (
        entries["schema-Transfer"]["description"]
        == '<SchemaDefinition schemaRef="#/components/schemas/Transfer" />'
    )


def test_the_rendered_document_leads_back_and_names_nothing_of_the_repository() -> None:
    out = reference.rendered(_doc())
    assert "../index.html" in out["info"]["description"]
    assert [s for s in _strings(out) if REPOSITORY.search(s)] == []


def test_nothing_else_of_the_document_changes() -> None:
    doc = _doc()
    out = reference.rendered(doc)
    for op in reference.operations(out):
        del op["x-codeSamples"]
    for key in ("tags", "x-tagGroups"):
        out.pop(key, None)
        doc.pop(key, None)
    out["info"].pop("description")
    doc["info"].pop("description")

    def untitled(node: Any) -> Any:  # the alternatives' titles are the rendering's own
        if isinstance(node, dict):
            return {k: untitled(v) for k, v in node.items() if not (k == "title" and "properties" in node)}
        return [untitled(v) for v in node] if isinstance(node, list) else node

    assert untitled(out["paths"]) == untitled(doc["paths"])
    out.pop("paths")
    doc.pop("paths")
    assert out == doc


def test_an_operation_without_a_sample_is_an_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    lang, label, path, mark = reference.SAMPLES[2]
    text = path.read_text()
    cut = tmp_path / path.name
    cut.write_text(text.replace(f"{mark} [get_v1_fee_balances]", f"{mark} fee balances", 1))
    monkeypatch.setattr(reference, "SAMPLES", (*reference.SAMPLES[:2], (lang, label, cut, mark)))
    with pytest.raises(ValueError, match="get_v1_fee_balances has no curl sample"):
        reference.rendered(copy.deepcopy(_doc()))


def test_regions_refuse_an_unended_or_repeated_sample() -> None:
    assert reference.regions("x\n# [a]\none\ntwo\n# [end]\ny\n", "#") == {"a": "one\ntwo\n"}
    with pytest.raises(ValueError, match="no end"):
        reference.regions("# [a]\none\n", "#")
    with pytest.raises(ValueError, match="two samples"):
        reference.regions("# [a]\n1\n# [end]\n# [a]\n2\n# [end]\n", "#")


def test_each_alternative_of_a_body_rule_is_named_apart() -> None:
    """Redoc names an untitled alternative after the body (``TransferCreate | TransferCreate``):
    every alternative of the rules beside a request body has a title of its own."""
    out = reference.rendered(_doc())
    named: list[list[str]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            branches = node.get("anyOf")
            if isinstance(branches, list) and all(
                isinstance(b, dict) and "properties" in b for b in branches
            ):
                named.append([b.get("title", "") for b in branches])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for op in reference.operations(out):
        walk(op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {}))
    assert len(named) >= 5
    assert [titles for titles in named if "" in titles or len(set(titles)) < len(titles)] == []
    transfers = out["paths"]["/v1/transfers"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert [b["title"] for b in transfers["allOf"][1]["anyOf"]] == [
        "source.currency USDC",
        "source.currency USDT",
    ]

"""docs/security.md maps each OWASP API Security Top 10 (2023) risk to the tests that prove
Sluice's answer. The map must not drift: every row names at least one test, and
every test it names exists (a file, and each ``::name`` a test function in that file), so a
renamed or deleted test breaks this check instead of leaving the row pointing at nothing."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "security.md"


def owasp_rows(text: str) -> dict[str, str]:
    """``API1`` .. ``API10`` -> the row's "proven by" cell."""
    rows: dict[str, str] = {}
    for line in text.splitlines():
        m = re.match(r"\| \*\*(API\d+) [^|]*\*\* \|[^|]*\| (.*) \|$", line)
        if m:
            rows[m.group(1)] = m.group(2)
    return rows


def references(cell: str) -> list[tuple[str, str | None]]:
    """Each ``path`` or ``path::test`` in a cell; a bare ``::test`` belongs to the last path."""
    refs: list[tuple[str, str | None]] = []
    path: str | None = None
    for token in re.findall(r"`([^`]+)`", cell):
        if token.startswith("tests/"):
            path, _, name = token.partition("::")
            refs.append((path, name or None))
        elif token.startswith("::") and path is not None:
            refs.append((path, token[2:]))
    return refs


def defined_tests(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    return {
        n.name
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name.startswith("test_")
    }


def problems(text: str) -> list[str]:
    rows = owasp_rows(text)
    found = [f"API{i}: no row" for i in range(1, 11) if f"API{i}" not in rows]
    for risk, cell in rows.items():
        refs = references(cell)
        if not refs:
            found.append(f"{risk}: names no test")
        for file, name in refs:
            target = ROOT / file
            if not target.is_file():
                found.append(f"{risk}: {file} does not exist")
            elif name is not None and name not in defined_tests(target):
                found.append(f"{risk}: {file}::{name} is not a test there")
    return found


def test_every_owasp_row_names_tests_that_exist() -> None:
    text = DOC.read_text()
    assert len(owasp_rows(text)) == 10
    assert problems(text) == []


def test_the_check_finds_a_missing_row_a_renamed_test_and_a_row_without_tests() -> None:
    text = DOC.read_text()
    broken = text.replace("::test_a_sandbox_key_cannot_reach_production_data", "::test_gone_missing")
    assert any("test_gone_missing is not a test" in p for p in problems(broken))
    row = next(line for line in text.splitlines() if line.startswith("| **API7"))
    assert any(p == "API7: no row" for p in problems(text.replace(row, "")))
    bare = row.rsplit("|", 2)[0] + "| nothing yet |"
    assert "API7: names no test" in problems(text.replace(row, bare))

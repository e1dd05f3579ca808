"""Each money rule has one definition: ``common.money``. A module-level assignment
to one of its names anywhere else under libs/ or services/ fails this test."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from common import money

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]


def _definitions(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign)
            else []
        )
        for t in targets:
            if isinstance(t, ast.Name):
                names.add(t.id)
    return names


def second_definitions(root: Path) -> list[str]:
    found = []
    for path in sorted([*(root / "libs").rglob("*.py"), *(root / "services").rglob("*.py")]):
        if path == root / "libs" / "common" / "money.py":
            continue
        for name in _definitions(ast.parse(path.read_text())) & set(money.RULES):
            found.append(f"{path.relative_to(root)}: {name}")
    return found


def test_money_rules_are_defined_once() -> None:
    assert second_definitions(ROOT) == []


def test_a_second_definition_is_found(tmp_path: Path) -> None:
    (tmp_path / "libs").mkdir()
    (tmp_path / "services" / "x").mkdir(parents=True)
    (tmp_path / "services" / "x" / "rules.py").write_text("MAX_AMOUNT = 10**12\nOTHER = 1\n")
    assert second_definitions(tmp_path) == ["services/x/rules.py: MAX_AMOUNT"]

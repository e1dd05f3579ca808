"""The suite's layering (issue 15): no service imports another, and libs/common imports no
service. Read from the source with ``ast``, so a lazy import inside a function counts too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SERVICES = ("gateway", "ledger", "compliance", "webhooks", "admin")


def _imported_tops(path: Path) -> set[str]:
    tops: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            tops.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            tops.add(node.module.split(".")[0])
    return tops


def _offenders(folder: Path, forbidden: set[str]) -> list[str]:
    return sorted(
        f"{p.relative_to(ROOT)} imports {', '.join(sorted(_imported_tops(p) & forbidden))}"
        for p in folder.rglob("*.py")
        if _imported_tops(p) & forbidden
    )


@pytest.mark.unit
@pytest.mark.parametrize("service", SERVICES)
def test_no_service_imports_another(service: str) -> None:
    folder = ROOT / "services" / service
    assert any(folder.rglob("*.py"))
    assert _offenders(folder, set(SERVICES) - {service}) == []


@pytest.mark.unit
def test_common_imports_no_service() -> None:
    assert _offenders(ROOT / "libs" / "common", set(SERVICES)) == []


@pytest.mark.unit
def test_the_check_sees_imports_at_any_depth(tmp_path: Path) -> None:
    """The walk finds a lazy import inside a function (so the tests above can fail)."""
    f = tmp_path / "m.py"
    f.write_text("import os\n\ndef f():\n    from ledger.journal import post\n    import admin.app\n")
    assert _imported_tops(f) == {"os", "ledger", "admin"}

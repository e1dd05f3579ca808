"""Every function of the product (libs/, services/, migrations included) is at most 70 lines,
decorators and docstring included: a function that does not fit on a screen mixes concerns
that want names of their own. Read with ``ast``, so nested functions count on their own and
inside the function that holds them."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 70


def too_long(path: Path, limit: int = MAX_LINES) -> list[str]:
    """``path:line name (N lines)`` for each function longer than ``limit``, counted from its
    first decorator to its last line."""
    where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            lines = (node.end_lineno or node.lineno) - first + 1
            if lines > limit:
                found.append(f"{where}:{node.lineno} {node.name} ({lines} lines)")
    return found


@pytest.mark.parametrize("folder", ["libs", "services"])
def test_every_product_function_fits_in_seventy_lines(folder: str) -> None:
    paths = sorted((ROOT / folder).rglob("*.py"))
    assert len(paths) > 20
    assert [f for p in paths for f in too_long(p)] == []


def test_the_check_fails_on_a_seventy_one_line_function(tmp_path: Path) -> None:
    """The limit is inclusive: 70 lines pass, 71 fail, a decorator counts, and so does a
    nested function inside its holder."""
    body = "".join(f"    x{i} = {i}\n" for i in range(68))
    source = (
        f"def fits():\n{body}    return 0\n\n"
        f"@staticmethod\ndef decorated():\n{body}    return 0\n\n"
        f"async def outer():\n    def inner():\n{body.replace('    ', '        ')}        return 0\n"
    )
    module = tmp_path / "probe.py"
    module.write_text(source)
    found = too_long(module)
    assert [f.split()[1] for f in found] == ["decorated", "outer"], found

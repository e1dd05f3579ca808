"""Comments and docstrings say why in the repository's own terms. Two kinds of citation cannot
be followed by a reader of the repository and so never appear in its code: an issue number (the
issues live outside the repository; history belongs in commit messages and
docs/performance/history.md) and a section of the contract (a file outside the repository: a
rule the code follows is stated on a page under docs/, and the code points there)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
CODE = ("libs", "services", "tools", "tests", "deploy", "clients/python/sluice_sdk")
FILES = ("Makefile", "Dockerfile", "compose.yaml", "pyproject.toml", "mkdocs.yml", ".pre-commit-config.yaml")
SUFFIXES = {".py", ".yaml", ".yml", ".toml", ".mako", ".sh"}
ISSUE = re.compile(r"\bissues? #?\d+|\(#\d+\)", re.IGNORECASE)
CONTRACT = re.compile(r"\bcontract(?:'s)? (?:section )?\d+|§\s*\d+", re.IGNORECASE)


def citations(path: Path) -> list[str]:
    """``path:line`` and the citation, for every issue number or contract section in ``path``."""
    where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
    found = []
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        for match in [*ISSUE.finditer(line), *CONTRACT.finditer(line)]:
            found.append(f"{where}:{number} {match.group(0)!r}")
    return found


def code_files() -> list[Path]:
    paths = [ROOT / name for name in FILES if (ROOT / name).exists()]
    for folder in CODE:
        paths += [
            p
            for p in (ROOT / folder).rglob("*")
            if p.is_file() and p.suffix in SUFFIXES and "node_modules" not in p.parts and p != Path(__file__)
        ]
    return sorted(paths)


def test_no_code_cites_an_issue_or_a_contract_section() -> None:
    files = code_files()
    assert len(files) > 300
    assert [c for p in files for c in citations(p)] == []


@pytest.mark.parametrize(
    ("line", "cited"),
    [
        ("# the door (issue 37): refused early", True),
        ("x = 1  # see issues 37 and 44", True),
        ('"""Why (contract 15.1): signed."""', True),
        ("# contract section 9", True),
        ("# the contract's 13.4", True),
        ("# docs/security.md, 'Authority between services'", False),
        ("# a tissue 3 mm thick", False),
        ("# contract 15.3's accounting", True),
    ],
)
def test_the_check_tells_a_citation(tmp_path: Path, line: str, cited: bool) -> None:
    path = tmp_path / "m.py"
    path.write_text(line + "\n")
    assert bool(citations(path)) is cited

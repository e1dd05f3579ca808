"""The README is the one-screen entry (docs/sdks/index.md): at most 250 lines, and every
link it gives into the documentation site names a file that exists (the site itself is built
in strict mode by make lint and tests/integration/test_docs_site.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def test_the_readme_fits_in_250_lines() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines: move the rest to docs/"


def test_every_relative_link_of_the_readme_exists() -> None:
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README.read_text())
    local = [link for link in links if "://" not in link]
    assert local, "the README links into docs/"
    assert [link for link in local if not (ROOT / link).exists()] == []

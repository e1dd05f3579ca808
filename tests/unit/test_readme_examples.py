"""The README's SDK walk-throughs and webhook receivers are the example files that
tests/integration/test_sdk_stack.py runs against the stack: a block edited in one
place only fails here."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = [
    ("python", "clients/python/examples/walkthrough.py"),
    ("python", "clients/python/examples/webhook_receiver.py"),
    ("typescript", "clients/typescript/examples/walkthrough.ts"),
    ("typescript", "clients/typescript/examples/receiver.ts"),
]


def test_the_readme_shows_the_examples_that_run() -> None:
    readme = (ROOT / "README.md").read_text()
    blocks = {(lang, body) for lang, body in re.findall(r"```(\w+)\n(.*?)```", readme, re.S)}
    for lang, path in EXAMPLES:
        assert (lang, (ROOT / path).read_text()) in blocks, (
            f"README.md's block for {path} differs from the file"
        )


def test_the_python_examples_type_check_strictly() -> None:
    """The walk-through calls resources with typed parameters: mypy --strict checks
    every field it sends and reads (the TypeScript examples are compiled strictly by tsc with
    the SDK's tests, tests/support/node.py)."""
    files = [str(ROOT / path) for lang, path in EXAMPLES if lang == "python"]
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", *files],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr

"""The TypeScript SDK's tests, run by Node's own test runner (`node --test`) from pytest, so
`make test` runs them: compile (tsc), then run one directory of compiled tests."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

TS = Path(__file__).resolve().parents[2] / "clients" / "typescript"


def build() -> None:
    tsc = TS / "node_modules" / ".bin" / "tsc"
    assert tsc.exists(), f"{tsc} missing: `make setup` runs npm ci in {TS}"
    run = subprocess.run([str(tsc), "-p", str(TS)], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout + run.stderr


def node_test(directory: str, env: dict[str, str] | None = None, timeout_s: float = 300) -> str:
    """Run ``node --test`` on ``dist/<directory>``; fail with its report when a test fails."""
    build()
    run = subprocess.run(
        ["node", "--test", "--test-reporter=spec", f"dist/{directory}/"],
        cwd=TS,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-3000:]
    return run.stdout

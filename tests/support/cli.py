"""Running the suite's command-line entry points as a user would: ``python -m <module>``."""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Any

from tools.stack.processes import ROOT, python_env


def run_module(*args: str, env: dict[str, str] | None = None, **kw: Any) -> subprocess.CompletedProcess[str]:
    """``python -m <args>`` with the suite's import path (or ``env``), its output captured as
    text; ``kw`` goes to :func:`subprocess.run` (``cwd``, ``timeout``, ``check``)."""
    env = python_env({}) if env is None else env
    return subprocess.run([sys.executable, "-m", *args], env=env, capture_output=True, text=True, **kw)


def run_schemathesis(
    document: str, token: str, *options: str, config: str | None = None
) -> tuple[subprocess.CompletedProcess[str], int]:
    """``schemathesis run --checks all`` over ``document`` as the holder of ``token`` (one
    worker, 30 s per request, the suite's hooks so addresses are valid on their chain), with
    ``options`` (seed, examples, phases) and a ``config`` file; the run and how many operations
    it tested."""
    env = python_env({"SCHEMATHESIS_HOOKS": "tests.support.schemathesis_hooks", "PYTHONPATH": str(ROOT)})
    cmd = [sys.executable, "-m", "schemathesis.cli", *(["--config-file", config] if config else [])]
    cmd += ["--no-color", "run", document, "--checks", "all"]
    cmd += ["--header", f"Authorization: Bearer {token}", "--workers", "1", "--request-timeout", "30"]
    proc = subprocess.run([*cmd, *options], env=env, cwd=ROOT, capture_output=True, text=True, timeout=900)
    tested = re.search(r"Tested: (\d+)", proc.stdout)
    return proc, int(tested.group(1)) if tested else 0

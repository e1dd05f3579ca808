"""The TypeScript SDK's tests, run by Node's own test runner (`node --test`) from pytest, so
`make test` runs them: compile (tsc), then run one directory of compiled tests.

Every caller compiles the same tree (the package, its tests and its examples into
clients/typescript/dist), so it is compiled once per pytest process, by ``tsc --build``: a
tree compiled before and unchanged since is left as it is (a missing or older output is
compiled again, which plain ``tsc --incremental`` does not notice). The workers of ``make
test`` share that directory: compiling, and packing (which compiles into it too), hold
:func:`dist_lock` alone; running what it holds shares it."""

from __future__ import annotations

import fcntl
import hashlib
import os
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

TS = Path(__file__).resolve().parents[2] / "clients" / "typescript"
_built: list[bool] = []  # set once this process has compiled the tree


@contextmanager
def dist_lock(exclusive: bool) -> Iterator[None]:
    """The tree's compiled output between this machine's pytest processes: a writer (tsc, npm
    pack) alone, readers (node) together; a reader never loads a file a writer is rewriting."""
    name = hashlib.sha256(str(TS).encode()).hexdigest()[:12]
    with open(Path(tempfile.gettempdir()) / f"sluice-ts-dist-{name}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def build() -> None:
    if _built:
        return
    tsc = TS / "node_modules" / ".bin" / "tsc"
    assert tsc.exists(), f"{tsc} missing: `make setup` runs npm ci in {TS}"
    with dist_lock(exclusive=True):
        run = subprocess.run([str(tsc), "--build", str(TS)], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    _built.append(True)


def node_test(directory: str, env: dict[str, str] | None = None, timeout_s: float = 300) -> str:
    """Run ``node --test`` on ``dist/<directory>``; fail with its report when a test fails."""
    build()
    with dist_lock(exclusive=False):
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

"""What every tool that starts local processes shares: the repository's root, ports nothing
listens on (never one handed out twice), waiting for a port, children that die with their
parent, and the environment a child Python process of the suite gets. The bottom of
tools/stack: it imports nothing of the tools, so the stores, the broker and the suite runner
can all use it without importing each other."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_HANDED_OUT: set[int] = set()


def _port_shard() -> tuple[int, int]:
    """(this test worker's index, the number of workers): ``make test`` runs its tests in
    pytest-xdist workers, each with a stack of its own, and two workers (or their children,
    which inherit the variables) must never be handed the same port. Outside xdist: (0, 1)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = os.environ.get("PYTEST_XDIST_WORKER_COUNT", "")
    if worker.startswith("gw") and worker[2:].isdigit() and count.isdigit() and int(count) > 1:
        return int(worker[2:]), int(count)
    return 0, 1


def free_port() -> int:
    """A port nothing listens on now, never one this process handed out before, and one of
    this test worker's share (half the port, modulo the number of workers, names the worker). The kernel
    may give a just-closed port again: make chaos (2026-11-26) gave ledger-1 and gateway-1 the
    same port, the gateway could not bind, and its clients' requests reached the ledger."""
    index, count = _port_shard()
    for _ in range(100_000):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        # Not ``port % count``: Linux hands out odd ports to bind() (even ones to connect()),
        # so the parity of the port itself would starve worker 0.
        if (port >> 1) % count == index and port not in _HANDED_OUT:
            _HANDED_OUT.add(port)
            return port
    raise RuntimeError(f"no free port for test worker {index} of {count}")


def wait_port(host: str, port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection((host, port), 0.5):
            return
        time.sleep(0.1)
    raise TimeoutError(f"{host}:{port} did not open within {timeout}s")


def port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), 0.5):
            return True
    except OSError:
        return False


def die_with_parent() -> None:
    """``preexec_fn``: the kernel stops the child (SIGTERM) when the process that started it
    dies, so a killed test run or ``make run`` never leaves services or brokers behind.
    (Linux ``prctl(PR_SET_PDEATHSIG)``; the parent is the starting thread, so start
    children from a long-lived thread. A no-op elsewhere.)"""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)


def python_env(extra: dict[str, str]) -> dict[str, str]:
    env = dict(os.environ)
    env.update(extra)
    paths = [str(ROOT / "libs"), str(ROOT / "services"), str(ROOT)]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env

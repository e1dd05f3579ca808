"""What the benches read from the machine: CPU of processes and of the whole box, peak RSS, and
a readiness wait for the baselines."""

from __future__ import annotations

import json
import os
import subprocess  # the tools start local processes  # nosec B404
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from tools.bench.overload.plan import DRIVER_NICE
from tools.stack.processes import ROOT, free_port, python_env


def cpu_times() -> tuple[int, int]:
    """(steal, total) jiffies of the whole machine, from /proc/stat (0, 0 elsewhere)."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return 0, 0
    return (fields[7] if len(fields) > 7 else 0), sum(fields[:8])


def steal_pct(before: tuple[int, int], after: tuple[int, int]) -> float:
    """Share of CPU time the hypervisor took from this machine between two readings: when it
    is high, every figure of the run (baselines included) is depressed."""
    total = after[1] - before[1]
    return 100.0 * (after[0] - before[0]) / total if total > 0 else 0.0


def _stat(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process, its reaped children and its living descendants
    (0 if gone): PostgreSQL's work is done in backends the postmaster forks, and a backend's
    time reaches the postmaster's counters only when it exits."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (st := _stat(int(entry.name))) is not None:
            children.setdefault(int(st[1]), []).append(int(entry.name))
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        st = _stat(p)
        if st is None:
            continue
        # the root's reaped children are counted by its own counters (cutime, cstime)
        total += sum(int(f) for f in st[11:15])
        todo.extend(children.get(p, []))
    return total / os.sysconf("SC_CLK_TCK")


def peak_rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def wait_ready(url: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/readyz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise TimeoutError(url)


def cpu_used(pids: dict[str, int], before: dict[str, float]) -> dict[str, float]:
    """CPU seconds of each process since ``before``."""
    return {name: cpu_seconds(pid) - before.get(name, 0.0) for name, pid in pids.items()}


def per_request(used: dict[str, float], served: float) -> str:
    """CPU milliseconds per request served of each process, busiest first."""
    served = max(1.0, served)
    return ", ".join(f"{n} {1000 * c / served:.2f} ms" for n, c in sorted(used.items(), key=lambda x: -x[1]))


def cpu_report(pids: dict[str, int], before: dict[str, float], served: float) -> str:
    """CPU milliseconds per request of each process since ``before``, busiest first."""
    return per_request(cpu_used(pids, before), served)


def _driver_priority() -> None:
    if DRIVER_NICE:
        os.nice(DRIVER_NICE)


def run_load(url: str, *args: str, headers: list[str]) -> dict[str, Any]:
    """One run of the load generator (``tools.bench.load``) against ``url``: POSTs with ``args``
    and JSON ``headers``; its figures (the last line it prints)."""
    cmd = [sys.executable, "-m", "tools.bench.load", url, "--method", "POST", *args]
    for h in ["Content-Type: application/json", *headers]:
        cmd += ["--header", h]
    out = subprocess.run(  # nosec B603 - our own load generator, argv list
        cmd,
        env=python_env({}),
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        preexec_fn=_driver_priority,  # the instrument keeps its schedule (tools.bench.overload.plan)
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


@contextmanager
def baseline_process(
    kind: str, dsn: str, env: dict[str, str] | None = None
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """A baseline server (``tools.bench.baselines``: ``bare``, ``monolith``, ``samecontract``)
    on a free port, ready; its process and base URL; stopped on exit. ``env``: the suite's
    environment (its stores and secrets), which ``samecontract`` runs with."""
    port = free_port()
    p = subprocess.Popen(  # bench load process, argv list, no shell  # nosec B603
        [sys.executable, "-m", "tools.bench.baselines", kind, str(port)],
        env=python_env({**(env or {}), "BENCH_DSN": dsn}),
        cwd=ROOT,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        wait_ready(base)
        yield p, base
    finally:
        p.terminate()
        p.wait(10)


def not_2xx(res: dict[str, Any]) -> str:
    """An open-loop run's answers that were not 2xx, by what became of them (tools.bench.answers)."""
    reasons = ", ".join(f"{k} {v}" for k, v in sorted(dict(res.get("failed_by_reason") or {}).items()))
    return (
        f"refused (503 overloaded) {res.get('refused', 0):.0f}, failed {res.get('failed', 0):.0f}"
        f"{f' ({reasons})' if reasons else ''}, 4xx {res.get('rejected', 0):.0f}, "
        f"no answer {res.get('no_answer', 0):.0f}, still running {res.get('unfinished', 0):.0f}"
    )

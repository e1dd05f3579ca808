"""``make profile``: where each service spends its CPU under the transfers load.

Starts the bench stack (tools.bench.stack), provisions ``PROFILE_WALLETS`` (300) funded
wallets through the API, waits for the pipeline to settle, then drives ``POST /v1/transfers``
closed loop with wrk for ``PROFILE_DURATION_S`` (20) while py-spy samples every Python service
(``--nonblocking``: the services are not paused to be read). Writes, under ``PROFILE_OUT``
(``.sluice/profile``), each service's collapsed stacks (``<service>.folded``, for speedscope or
flamegraph.pl), a flame graph (``<service>.svg``) and ``top.md``: the CPU per transfer of every
process of the stack, and each service's top frames by own time and by inclusive time.
"""

from __future__ import annotations

import asyncio
import os
import subprocess  # the tools start local processes  # nosec B404
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from tools.bench import flame, wrk
from tools.bench import transfers as bench_transfers
from tools.bench.measure import cpu_report, cpu_seconds, cpu_times, steal_pct
from tools.bench.stack import bench_stack, pg_settings
from tools.stack.provision import provision

WALLETS = int(os.environ.get("PROFILE_WALLETS", "300"))
DURATION = float(os.environ.get("PROFILE_DURATION_S", "20"))
CONNECTIONS = int(os.environ.get("BENCH_CONNECTIONS", "64"))
OUT = Path(os.environ.get("PROFILE_OUT", ".sluice/profile"))
PROFILED = ("gateway", "compliance", "ledger", "webhooks")
TOP = 12


def py_spy() -> str:
    exe = Path(sys.executable).parent / "py-spy"
    return str(exe) if exe.exists() else "py-spy"


def read_folded(path: Path) -> Counter[str]:
    stacks: Counter[str] = Counter()
    for line in path.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if stack and n.isdigit():
            stacks[stack] += int(n)
    return stacks


def _short(frame: str) -> str:
    """``fn (path/to/module.py:12)`` -> ``fn (module.py:12)``; ``site-packages/pkg/...`` keeps pkg."""
    name, _, where = frame.partition(" (")
    where = where.rstrip(")")
    path, _, line = where.rpartition(":")
    parts = Path(path).parts
    if "site-packages" in parts:
        i = parts.index("site-packages")
        path = "/".join(parts[i + 1 : i + 2] + parts[-1:])
    elif "libs" in parts or "services" in parts:
        i = max(parts.index(p) for p in ("libs", "services") if p in parts)
        path = "/".join(parts[i + 1 :])
    else:
        path = parts[-1] if parts else path
    return f"{name} ({path}:{line})" if line else f"{name} ({path})"


def top_frames(stacks: Counter[str]) -> tuple[int, list[tuple[str, int]], list[tuple[str, int]]]:
    total = sum(stacks.values())
    own: Counter[str] = Counter()
    incl: Counter[str] = Counter()
    for stack, n in stacks.items():
        frames = stack.split(";")
        own[_short(frames[-1])] += n
        for f in {_short(f) for f in frames}:
            incl[f] += n
    ours = [(f, n) for f, n in incl.most_common() if "site-packages" not in f and ".py:" in f]
    return total, own.most_common(TOP), ours[:TOP]


OURS = {"common", "gateway", "compliance", "ledger", "webhooks", "admin", "tools"}


def _package(frame: str) -> str | None:
    """The package a py-spy frame's file belongs to (``sluice:<module>`` for ours), None for
    the standard library (its time is charged to the nearest caller that is not)."""
    path = frame.rpartition(" (")[2].rstrip(")").rpartition(":")[0]
    first = path.split("/")[0]
    if first.startswith("<"):
        return None
    if first in OURS:
        return "sluice:" + path.rsplit(".", 1)[0]
    mod = first.removesuffix(".py")
    return None if mod in sys.stdlib_module_names else mod


def by_package(stacks: Counter[str]) -> list[tuple[str, int]]:
    """Own time by package: each sample goes to its innermost frame outside the stdlib
    (``uvloop`` is the event loop itself: polling, callbacks, socket I/O)."""
    own: Counter[str] = Counter()
    for stack, n in stacks.items():
        frames = stack.split(";")
        pkg = next((p for f in reversed(frames) if (p := _package(f))), "stdlib")
        own[pkg] += n
    return own.most_common(8)


def table(name: str, stacks: Counter[str]) -> str:
    total, own, ours = top_frames(stacks)
    lines = [f"### {name} ({total} samples)", ""]
    shares = ", ".join(f"{p} {100 * n / total:.0f}%" for p, n in by_package(stacks))
    lines += ["Own time by package: " + shares]
    lines += ["", "| own % | frame |", "|---|---|"]
    lines += [f"| {100 * n / total:.1f} | `{f}` |" for f, n in own]
    lines += ["", "| inclusive % | frame (Sluice code) |", "|---|---|"]
    lines += [f"| {100 * n / total:.1f} | `{f}` |" for f, n in ours]
    return "\n".join(lines) + "\n"


def idle_shares(pids: dict[str, int], seconds: float = 10.0) -> dict[str, float]:
    """Each process's share of one core over ``seconds`` with no request: what polling costs
    an idle stack."""
    time.sleep(15.0)  # the set-up's events still being worked through by the background consumers
    before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    time.sleep(seconds)
    return {name: (cpu_seconds(pid) - before[name]) / seconds for name, pid in pids.items()}


def shares_line(used: dict[str, float]) -> str:
    total = sum(used.values())
    parts = ", ".join(f"{n} {100 * c:.1f}%" for n, c in sorted(used.items(), key=lambda x: -x[1]))
    return f"total {100 * total:.0f}% ({parts})"


def idle_cpu(pids: dict[str, int], seconds: float = 10.0) -> str:
    """:func:`idle_shares` as one line."""
    return shares_line(idle_shares(pids, seconds))


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="sluice-profile-"))
    started = cpu_times()
    with bench_stack(work) as stack:
        gw, admin = stack.procs["gateway"].url, stack.procs["admin"].url
        key, wallets = asyncio.run(provision(gw, admin, stack.token, WALLETS))
        url, auth = gw + "/v1/transfers", f"Bearer {key}"
        if not bench_transfers.settle(url, key, wallets):
            print("profile: pipeline NOT SETTLED after set-up", flush=True)
            return 1
        idle = idle_cpu(stack.pids)
        print(f"idle: {idle}", flush=True)
        seq = bench_transfers.sequential(url, key, wallets)
        print(f"sequential: p50 {seq['p50_ms']:.1f} ms p99 {seq['p99_ms']:.1f} ms", flush=True)
        wrk.run(url, wallets=wallets, auth=auth, duration=3, connections=CONNECTIONS)  # warm-up
        spies = {
            name: subprocess.Popen(  # nosec B603 - py-spy on our own processes, argv list
                [
                    *(py_spy(), "record", "--nonblocking", "--rate", "200", "--format", "raw"),
                    *("--duration", str(int(DURATION)), "--pid", str(stack.pids[name])),
                    *("--output", str(OUT / f"{name}.folded")),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for name in PROFILED
        }
        before = {name: cpu_seconds(pid) for name, pid in stack.pids.items()}
        res = wrk.run(url, wallets=wallets, auth=auth, duration=DURATION, connections=CONNECTIONS)
        report = cpu_report(stack.pids, before, res["ok_rps"] * DURATION)
        for p in spies.values():
            p.wait(60)
        settings = pg_settings(stack.asyncpg_dsn)
    head = (
        f"profile: {res['ok_rps']:.0f} transfers/s (2xx) p50 {res['p50_ms']:.0f} ms "
        f"p99 {res['p99_ms']:.0f} ms (sequential p50 {seq['p50_ms']:.1f} ms), "
        f"{WALLETS} wallets, {DURATION:.0f} s, {CONNECTIONS} connections; "
        f"load average {os.getloadavg()[0]:.1f}, steal {steal_pct(started, cpu_times()):.0f}%"
    )
    doc = [
        "# Profile of the transfers load (`make profile`)",
        "",
        head,
        "",
        "postgresql: " + ", ".join(f"{k}={v}" for k, v in settings.items()),
        "",
        "CPU per transfer: " + report,
        "",
        "Idle stack, CPU share of one core over 10 s: " + idle,
        "",
    ]
    for name in PROFILED:
        folded = OUT / f"{name}.folded"
        if folded.exists():
            stacks = read_folded(folded)
            doc.append(table(name, stacks))
            flame.write_svg(stacks, OUT / f"{name}.svg", title=f"{name}: {head}")
    (OUT / "top.md").write_text("\n".join(doc))
    print("\n".join(doc), flush=True)
    print(f"cpu per transfer: {report}", flush=True)
    print(f"profiles: {OUT}/<service>.svg, .folded; table: {OUT}/top.md", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

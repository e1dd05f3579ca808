"""``python -m tests.simulation [--seeds N] [--first S] [--steps K] [--jobs J]`` runs seeds of the
simulation (``--seed S`` replays one and prints every violation); each failing seed is printed
with the command that replays it; exit 1 if any failed.

String hashing is fixed (``PYTHONHASHSEED=0``, set by re-executing when it is not), so a seed
replays the same way in every process. ``--jobs`` splits the seeds over that many processes,
each with its own database.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterable

from tests.simulation.sim import ROOT, Simulation, summary
from tools.stack.stores import embedded_postgres

TOTALS = re.compile(r"^simulate: seeds (\d+) violations (\d+) commands (\d+) crashes (\d+)")


def parse(argv: list[str]) -> argparse.Namespace:
    env = os.environ.get
    p = argparse.ArgumentParser(prog="python -m tests.simulation")
    p.add_argument("--seeds", type=int, default=int(env("SIMULATE_SEEDS", "10000")))
    p.add_argument("--first", type=int, default=int(env("SIMULATE_FIRST", "0")))
    seed = env("SIMULATE_SEED")
    p.add_argument("--seed", type=int, default=int(seed) if seed else None, help="replay this one seed")
    p.add_argument("--steps", type=int, default=int(env("SIMULATE_STEPS", "40")))
    p.add_argument("--jobs", type=int, default=int(env("SIMULATE_JOBS", "1")))
    return p.parse_args(argv)


async def run(args: argparse.Namespace) -> int:
    seeds = [args.seed] if args.seed is not None else range(args.first, args.first + args.seeds)
    base, close = os.environ.get("SIMULATE_DATABASE_URL", ""), None
    if not base:  # the embedded PostgreSQL of make setup, never the machine's own
        base, close = await asyncio.to_thread(embedded_postgres, ROOT / ".sluice" / "simulate")
    try:
        return await _run_seeds(args, seeds, base)
    finally:
        if close is not None:
            close()


async def _run_seeds(args: argparse.Namespace, seeds: Iterable[int], base: str) -> int:
    outcomes = []
    started = time.monotonic()
    async with Simulation(base) as sim:
        for i, seed in enumerate(seeds, 1):
            out = await sim.run_seed(seed, args.steps)
            outcomes.append(out)
            if not out.ok:
                print(out.line(), flush=True)
                if args.seed is not None:
                    for v in out.violations:
                        print("  ", v)
            if i % 500 == 0:
                print(f"... {args.first}+{i} seeds in {time.monotonic() - started:.0f} s", flush=True)
    print(summary(outcomes), f"in {time.monotonic() - started:.0f} s", flush=True)
    return 0 if all(o.ok for o in outcomes) else 1


def fan_out(args: argparse.Namespace) -> int:
    """Split the seeds over ``args.jobs`` processes; add up their totals."""
    started = time.monotonic()
    share = -(-args.seeds // args.jobs)
    children = []
    for j in range(args.jobs):
        first = args.first + j * share
        count = min(share, args.first + args.seeds - first)
        if count <= 0:
            continue
        cmd = [sys.executable, "-m", "tests.simulation", "--first", str(first), "--seeds", str(count)]
        cmd += ["--steps", str(args.steps), "--jobs", "1"]
        children.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True))
    totals = [0, 0, 0, 0]
    codes = []
    for child in children:
        assert child.stdout is not None
        for line in child.stdout:
            if m := TOTALS.match(line):
                totals = [a + int(b) for a, b in zip(totals, m.groups(), strict=True)]
            print(line, end="", flush=True)
        codes.append(child.wait())
    print(
        f"simulate: seeds {totals[0]} violations {totals[1]} commands {totals[2]} crashes {totals[3]}"
        f" steps {args.steps} jobs {len(children)} in {time.monotonic() - started:.0f} s",
        flush=True,
    )
    return 0 if codes and not any(codes) and totals[0] == args.seeds else 1


def main(argv: list[str]) -> int:
    if os.environ.get("PYTHONHASHSEED") != "0":
        os.execve(
            sys.executable,
            [sys.executable, "-m", "tests.simulation", *argv],
            {**os.environ, "PYTHONHASHSEED": "0"},
        )
    args = parse(argv)
    if args.jobs > 1 and args.seed is None:
        return fan_out(args)
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The Patroni failover drill (``make chaos-patroni``; not part of make test or make
chaos yet): etcd (:mod:`tools.stack.etcd`) and three Patroni nodes
(:mod:`tools.chaos.patroni.cluster`), a table, and a small asyncpg client writing numbered rows
through the multi-host URL (``target_session_attrs=read-write``) while the drill

- ``lost``: SIGKILLs the leader's node (its Patroni agent and its PostgreSQL together), waits
  for Patroni to promote a replica, then starts the lost node's agent again (it rejoins as a
  replica, rewound with ``pg_rewind``);
- ``switchover``: asks the leader for a planned switchover (``POST /switchover``).

After each it prints ``patroni-drill: <fault> rpo N detection_s X rto_s Y``:

- **rpo**: commits the client saw acknowledged that the new leader does not have;
- **detection_s**: from the fault (the kill, or the switchover request) to the leader key in
  etcd naming another node (the promotion's start). For a lost node this is Patroni's ``ttl``:
  the dead leader's key must expire first;
- **rto_s**: from the promotion's start to the client's first acknowledged write.

It exits 1 when a fault lost an acknowledged commit or took longer than ``MAX_RTO_S`` to take
writes again; :func:`failures` decides, without a cluster (tests/unit/test_patroni_drill.py).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from tools.chaos.patroni.cluster import PatroniCluster, PatroniError

MAX_RTO_S = 15.0
TABLE = "patroni_drill"


@dataclass(frozen=True)
class FaultResult:
    fault: str
    rpo: int
    detection_s: float
    rto_s: float

    def line(self) -> str:
        timing = f"detection_s {self.detection_s:.1f} rto_s {self.rto_s:.1f}"
        return f"patroni-drill: {self.fault} rpo {self.rpo} {timing}"


def lost_commits(acked: Iterable[int], present: Iterable[int]) -> int:
    """Acknowledged commits missing from the new leader (the RPO, in commits)."""
    return len(set(acked) - set(present))


def first_write_after(at: float, acked_at: Iterable[float]) -> float | None:
    """Seconds from ``at`` to the first acknowledgement at or after it (None: none yet)."""
    later = [t for t in acked_at if t >= at]
    return min(later) - at if later else None


def failures(results: Iterable[FaultResult], max_rto_s: float = MAX_RTO_S) -> list[str]:
    """Why the drill fails: a lost acknowledged commit, or writes back too late."""
    out = []
    for r in results:
        if r.rpo > 0:
            out.append(f"{r.fault}: {r.rpo} acknowledged commits lost")
        if r.rto_s > max_rto_s:
            out.append(f"{r.fault}: writes back {r.rto_s:.1f} s after the promotion (> {max_rto_s:.0f} s)")
    return out


@dataclass
class Writer:
    """Numbered inserts, one at a time, through the multi-host DSN; a failed insert (or
    connection) is retried on a new connection and not counted as acknowledged."""

    dsn: str
    acked: dict[int, float] = field(default_factory=dict)  # seq -> when its commit returned
    errors: int = 0
    seq: int = 0

    async def run(self, stop: asyncio.Event) -> None:
        import asyncpg

        conn = None
        while not stop.is_set():
            try:
                if conn is None:
                    conn = await asyncpg.connect(self.dsn, timeout=2)
                self.seq += 1
                await conn.execute(f"INSERT INTO {TABLE} (seq) VALUES ($1)", self.seq, timeout=5)  # noqa: S608
                self.acked[self.seq] = time.monotonic()
                await asyncio.sleep(0.01)
            except Exception:  # noqa: BLE001 - any failure: a new connection, the next number
                self.errors += 1
                if conn is not None:
                    conn.terminate()
                    conn = None
                await asyncio.sleep(0.05)
        if conn is not None:
            conn.terminate()


def log(msg: str) -> None:
    print(f"[patroni-drill {time.strftime('%H:%M:%S')}] {msg}", flush=True)


class Drill:
    def __init__(self, work: Path, database: str) -> None:
        from tools.stack import etcd as etcd_embedded

        started = time.monotonic()
        self.etcd = etcd_embedded.single_node(work)
        log(
            f"etcd {etcd_embedded.ETCD_VERSION} at {','.join(self.etcd.hosts)}"
            f" ({time.monotonic() - started:.1f} s)"
        )
        self.cluster = PatroniCluster(work, self.etcd.hosts)
        self.database = database

    def start(self) -> None:
        started = time.monotonic()
        self.cluster.start()
        leader = self.cluster.leader()
        log(f"patroni: leader {leader}, replicas streaming ({time.monotonic() - started:.1f} s)")
        env = self.cluster.prepare(self.database)
        roles = sum(1 for k in env if k != "SLUICE_DATABASE_URL")
        log(
            f"database {self.database} with {roles} service roles;"
            f" the services' URL {env['SLUICE_DATABASE_URL']}"
        )

    async def table(self) -> None:
        import asyncpg

        conn = await asyncpg.connect(self.cluster.dsn(self.database), timeout=5)
        try:
            await conn.execute(
                f"CREATE TABLE IF NOT EXISTS {TABLE} (seq bigint PRIMARY KEY, at timestamptz DEFAULT now())"
            )
        finally:
            await conn.close()

    async def measure(self, fault: str, writer: Writer, faulted_at: float, promoted_at: float) -> FaultResult:
        import asyncpg

        deadline = time.monotonic() + 60
        rto = first_write_after(promoted_at, writer.acked.values())
        while rto is None and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
            rto = first_write_after(promoted_at, writer.acked.values())
        await asyncio.sleep(1.0)  # a few more writes on the new leader
        acked = list(writer.acked)
        conn = await asyncpg.connect(self.cluster.dsn(self.database), timeout=5)
        try:
            present = [r["seq"] for r in await conn.fetch(f"SELECT seq FROM {TABLE}")]  # noqa: S608
        finally:
            await conn.close()
        return FaultResult(
            fault, lost_commits(acked, present), promoted_at - faulted_at, rto if rto is not None else 999.0
        )

    async def lost(self, writer: Writer) -> FaultResult:
        old = await asyncio.to_thread(self.cluster.wait_leader)
        log(f"fault: the leader {old}'s node lost (Patroni agent and PostgreSQL SIGKILLed)")
        faulted_at = time.monotonic()
        await asyncio.to_thread(self.cluster.lose_node, old)
        new, promoted_at = await asyncio.to_thread(self.cluster.wait_key_change, old, 60.0)
        log(f"{new} holds the leader key {promoted_at - faulted_at:.1f} s after the loss")
        result = await self.measure("lost", writer, faulted_at, promoted_at)
        print(result.line(), flush=True)
        started = time.monotonic()
        await asyncio.to_thread(self.cluster.start_node, old)
        try:
            await asyncio.to_thread(self.cluster.wait_replicas, 2, 90.0)
        except PatroniError as exc:  # the switchover still has a replica to go to
            log(f"{old} did not rejoin: {exc}")
            return result
        log(
            f"{old}'s agent started again: rejoined as a streaming replica"
            f" in {time.monotonic() - started:.1f} s"
        )
        return result

    async def switchover(self, writer: Writer) -> FaultResult:
        old = await asyncio.to_thread(self.cluster.wait_leader)
        log(f"fault: planned switchover from {old} (POST /switchover)")
        faulted_at = time.monotonic()
        watch = asyncio.create_task(asyncio.to_thread(self.cluster.wait_key_change, old, 60.0))
        await asyncio.to_thread(self.cluster.switchover)
        new, promoted_at = await watch
        log(f"{new} holds the leader key {promoted_at - faulted_at:.1f} s after the request")
        result = await self.measure("switchover", writer, faulted_at, promoted_at)
        print(result.line(), flush=True)
        return result

    async def run(self, faults: list[str]) -> list[FaultResult]:
        await self.table()
        writer = Writer(self.cluster.dsn(self.database))
        stop = asyncio.Event()
        task = asyncio.create_task(writer.run(stop))
        results = []
        try:
            await asyncio.sleep(2.0)
            for fault in faults:
                results.append(await (self.lost(writer) if fault == "lost" else self.switchover(writer)))
                await asyncio.sleep(2.0)
        finally:
            stop.set()
            await task
        log(f"{len(writer.acked)} commits acknowledged, {writer.errors} failed attempts")
        return results

    def stop(self) -> None:
        """Agents and etcd stopped; their directories stay for main to keep or remove."""
        self.cluster.stop()
        self.etcd.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.chaos.patroni.drill", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--faults", default="lost,switchover", help="lost and/or switchover, in order")
    parser.add_argument("--database", default="sluice_patroni")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (logs, data)")
    args = parser.parse_args(argv)
    faults = [f for f in args.faults.split(",") if f]
    unknown = set(faults) - {"lost", "switchover"}
    if unknown:
        parser.error(f"unknown faults: {', '.join(sorted(unknown))}")
    work = Path(tempfile.mkdtemp(prefix="sluice-patroni-"))
    started = time.monotonic()
    drill: Drill | None = None
    ok = False
    try:
        drill = Drill(work, args.database)
        drill.start()
        results = asyncio.run(drill.run(faults))
        why = failures(results)
        for reason in why:
            log(f"FAIL {reason}")
        ok = not why and len(results) == len(faults)
    finally:
        if drill is not None:
            drill.stop()
        log(f"{'passed' if ok else 'failed'} in {time.monotonic() - started:.0f} s; work directory {work}")
        if ok and not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

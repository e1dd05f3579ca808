"""``make chaos-pitr`` (part of ``make chaos``): backups that restore, drilled.

The suite (gateway, compliance, ledger, admin: one process each) runs on stores this run owns,
as ``tools.chaos.scenario`` runs it: its own PostgreSQL (tools.chaos.stores.OwnPostgres) with
continuous WAL archiving into a directory, its own Valkey, a fresh Apache Kafka. After the
tenant is set up through the API, a base backup is taken (``pg_basebackup``, checked by
``pg_verifybackup``). Clients book transfers (tools.chaos.clients), paced (``--rate``) so
that the load spans several anchoring intervals; halfway through, the drill reads the
primary's clock: that is the restore target T. The load goes on to its end,
the anchors catch up with the journal, the suite stops, the last WAL segment is archived
(``pg_switch_wal()``) and the primary is stopped: it is lost.

A new cluster is restored from the base backup and the archive to T (``recovery_target_time``,
promoted), on a new port, and checked before anything writes to it: the ledger's own
verify_journal and reconcile, read only, with the ledger's role and settings against the same
Kafka's anchors (tools.chaos.pitr.check); every transfer acknowledged before T present exactly
once; nothing of after T; balances exact; every anchor made before T naming an entry the
restored journal has, with its hash. One line, ``pitr: restored to T transfers_before_T N
missing N ... reconcile ok verify_journal truncated_tail through S ... CLEAN`` (tools.chaos.pitr.audit);
exit 1 unless clean. Figures for docs/operations/backups.md are logged.
``--restore-offset-s -3`` is the negative control: restored to 3 s before T, checked against T,
it must fail (acknowledged transfers missing).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess  # the tools start local processes  # nosec B404
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
from sqlalchemy.engine import make_url

from tools.chaos import audit as chaos_audit
from tools.chaos.clients import Booking, Progress, run_clients
from tools.chaos.pitr import audit as pitr_audit
from tools.chaos.pitr import pg as pitr_pg
from tools.chaos.stores import OwnPostgres, OwnRedis
from tools.stack.processes import ROOT, free_port, python_env
from tools.stack.provision import provision
from tools.stack.stores import Stores
from tools.stack.suite import Suite, ephemeral_secrets, migrate, scoped_env

SERVICES = ("gateway", "compliance", "ledger", "admin")
SCOPES = ["customers:write", "wallets:write", "virtual_accounts:write", "transfers:write"]
DATABASE = "sluice_pitr"
ANCHOR_INTERVAL_S = 2.0
# An anchor is stamped before its head is read: one stamped this long before T names a head
# read before T (a turn takes milliseconds; seconds on a loaded two-core machine).
ANCHOR_MARGIN_S = 2.0


def log(msg: str) -> None:
    print(f"[pitr {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def repointed(env: dict[str, str], port: int) -> dict[str, str]:
    """``env`` with every database URL (the superuser's and each role's) on ``port``."""
    out = dict(env)
    for k, v in env.items():
        if k.startswith("SLUICE_DATABASE_URL") and "://" in v:
            out[k] = make_url(v).set(port=port).render_as_string(hide_password=False)
    return out


class Drill:
    def __init__(self, args: argparse.Namespace, work: Path) -> None:
        self.args, self.work = args, work
        self.pg = OwnPostgres(work)
        self.redis = OwnRedis(work)
        self.stores = Stores(work)
        self.suite: Suite | None = None
        self.restored: OwnPostgres | None = None
        self.archive, self.backup = work / "pitr" / "archive", work / "pitr" / "base"
        self.figures: dict[str, Any] = {}

    # ---- set-up ----
    def start(self) -> None:
        since = time.monotonic()
        self.pg.init()
        pitr_pg.enable_archiving(self.pg, self.archive)
        self.redis.start()
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLUICE_")}
        env |= {"SLUICE_DATABASE_URL": self.pg.url, "SLUICE_REDIS_URL": self.redis.url}
        self.stores.start(fresh_kafka=True, database=DATABASE, env=env, kafka_nodes=self.args.brokers)
        log(
            f"stores: pg 127.0.0.1:{self.pg.port} archiving to {self.archive}, kafka {self.stores.kafka_kind}"
        )
        senv = {
            **ephemeral_secrets("pitr"),
            **self.stores.service_env(),
            "SLUICE_REDIS_URL": self.redis.url,
            "SLUICE_SANDBOX_SETTLE_S": "1",
            "SLUICE_DB_POOL_SIZE": "5",
            "SLUICE_JOURNAL_ANCHOR_INTERVAL_S": str(ANCHOR_INTERVAL_S),
            "SLUICE_LOG_LEVEL": "INFO",
        }
        migrate(senv, self.work / "logs" / "migrate.log")
        self.suite = Suite(senv, self.work / "logs")
        for name in SERVICES:
            self.suite.start(name, free_port(), instance=f"{name}-0")
        self.suite.wait_ready(timeout=300)
        self.figures["setup_s"] = pitr_pg.elapsed(since)
        log(f"suite ready in {self.figures['setup_s']} s; logs in {self.work / 'logs'}")

    def url(self, name: str) -> str:
        assert self.suite is not None
        return next(p.url for p in self.suite.procs if p.name == name)

    # ---- the run ----
    def run(self) -> int:
        args = self.args
        assert self.suite is not None
        token = self.suite.env["SLUICE_ADMIN_TOKEN"]
        key, wallets = asyncio.run(
            provision(
                self.url("gateway"), self.url("admin"), token, args.wallets, scopes=SCOPES, funding="10000.00"
            )
        )
        tenant_id = asyncio.run(
            self._fetchval("SELECT tenant_id FROM ledger.wallets WHERE id = $1", wallets[0])
        )
        since = time.monotonic()
        pitr_pg.base_backup(self.pg, self.backup)
        self.figures["base_backup_s"] = pitr_pg.elapsed(since)
        self.figures["base_backup_mb"] = round(_size(self.backup) / 2**20, 1)
        mb, took = self.figures["base_backup_mb"], self.figures["base_backup_s"]
        log(f"tenant {tenant_id}; base backup {mb} MB in {took} s")
        progress = Progress(args.transfers)
        clients = threading.Thread(
            target=lambda: asyncio.run(
                run_clients(
                    [self.url("gateway")],
                    key,
                    wallets,
                    progress,
                    args.clients,
                    args.deadline_s,
                    uuid.uuid4().hex[:8],
                )
            ),
            daemon=True,
        )
        lsn = asyncio.run(self._fetchval("SELECT pg_current_wal_lsn()::text"))
        since = time.monotonic()
        target, before_mono = self._load(clients, progress)
        self.figures["load_s"] = pitr_pg.elapsed(since)
        wal = _lsn(asyncio.run(self._fetchval("SELECT pg_current_wal_lsn()::text"))) - _lsn(lsn)
        self.figures["load_wal_mb"] = round(wal / 2**20, 1)
        log(
            f"load done in {self.figures['load_s']} s, {self.figures['load_wal_mb']} MB of WAL: "
            + ", ".join(f"{k} x{v}" for k, v in progress.answers.items())
        )
        head = asyncio.run(
            self._fetchval("SELECT max(seq) FROM ledger.journal_entries WHERE tenant_id = $1", tenant_id)
        )
        anchored = self._wait_anchored(tenant_id, int(head or 0))
        log(f"journal head {head}, newest anchor {anchored}")
        self.suite.stop()
        segment = asyncio.run(pitr_pg.switch_and_archive(self.pg))
        segments, size = pitr_pg.archive_bytes(self.archive)
        self.figures |= {"wal_segments": segments, "wal_mb": round(size / 2**20, 1)}
        log(f"archived through {segment}: {segments} files, {self.figures['wal_mb']} MB; the primary is lost")
        self.pg.stop("immediate")
        since = time.monotonic()
        restore_to = target + timedelta(seconds=self.args.restore_offset_s)  # a negative control's
        self.restored = pitr_pg.restore(self.backup, self.archive, restore_to, self.work / "restored")
        self.figures["restore_s"] = pitr_pg.elapsed(since)
        for line in pitr_pg.recovery_log(self.restored):
            log(f"restored: {line[-160:]}")
        log(f"restored and promoted on 127.0.0.1:{self.restored.port} in {self.figures['restore_s']} s")
        since = time.monotonic()
        facts = self.check(tenant_id, target, progress.bookings, before_mono)
        if restore_to != target:
            facts.target = f"{restore_to.isoformat()} (T {target.isoformat()})"
        self.figures["check_s"] = pitr_pg.elapsed(since)
        log("figures: " + json.dumps(self.figures))
        print(pitr_audit.line(facts), flush=True)
        return 0 if not pitr_audit.problems(facts) else 1

    def _load(self, clients: threading.Thread, progress: Progress) -> tuple[datetime, float]:
        """Run the load at ``--rate`` transfers a second (the clients' gate, moved along with
        the time), so that it spans several anchoring intervals on a fast machine too; T is
        read from the primary's clock once ``--target-at`` of it is decided. (T, a
        time.monotonic() taken before it: every answer received by then came before T.)"""
        args, started = self.args, time.monotonic()
        target: datetime | None = None
        before_mono = 0.0
        progress.gate = 1
        clients.start()
        while clients.is_alive():
            progress.gate = min(args.transfers, 1 + int(args.rate * (time.monotonic() - started)))
            if target is None and progress.decided >= args.transfers * args.target_at:
                before_mono = time.monotonic()
                target = asyncio.run(self._fetchval("SELECT clock_timestamp()"))
                log(f"restore target T = {target.isoformat()} ({progress.decided}/{args.transfers} decided)")
            time.sleep(0.05)
        progress.gate = None
        if target is None:
            raise RuntimeError(f"the load ended at {progress.decided} decided, before T")
        return target, before_mono

    def _wait_anchored(self, tenant_id: str, head: int, timeout_s: float = 30.0) -> int:
        """Wait until the ledger has anchored the journal's head (so anchors after T exist)."""
        assert self.suite is not None
        deadline, newest = time.monotonic() + timeout_s, 0
        while time.monotonic() < deadline:
            anchors = self._check(self.suite.env, tenant_id, "--anchors-only")["anchors"]
            newest = max((a["seq"] for a in anchors if a["tenant_id"] == tenant_id), default=0)
            if newest >= head:
                break
            time.sleep(ANCHOR_INTERVAL_S)
        return newest

    # ---- the check of the restored cluster ----
    def _check(self, env: dict[str, str], tenant_id: str, *flags: str) -> dict[str, Any]:
        """tools.chaos.pitr.check with the ledger's own settings, on the database ``env`` names."""
        child = scoped_env("ledger", python_env(env))
        done = subprocess.run(  # our own module, argv list, no shell  # nosec B603
            [sys.executable, "-m", "tools.chaos.pitr.check", tenant_id, *flags],
            env=child,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"pitr_check failed ({done.returncode}): {done.stderr[-2000:]}")
        return dict(json.loads(done.stdout.strip().splitlines()[-1]))

    def check(
        self, tenant_id: str, target: datetime, bookings: list[Booking], before_mono: float
    ) -> pitr_audit.PitrFacts:
        assert self.suite is not None and self.restored is not None
        found = self._check(repointed(self.suite.env, self.restored.port), tenant_id)
        verify, rec = found["verify_journal"], found["reconcile"]
        log(f"verify_journal: {json.dumps(verify)[:600]}")
        log(f"reconcile: ok {rec.get('ok')} discrepancies {rec.get('discrepancies', [])[:3]}")
        db = asyncio.run(_restored_rows(pitr_pg.dsn(self.restored, DATABASE), tenant_id))
        margin = self.args.margin_s
        acked = {b.key: b for b in bookings if b.transfer_id and b.status and b.status < 300}
        before = {k: b for k, b in acked.items() if b.started + b.decided_after_s < before_mono - margin}
        keys = Counter(r["idempotency_key"] for r in db["transfers"])
        rows = {r["idempotency_key"]: r for r in db["transfers"]}
        missing = [k for k, b in before.items() if k not in rows or rows[k]["id"] != b.transfer_id]
        issued = {b.key for b in bookings}
        twice = sum(n - 1 for n in keys.values() if n > 1) + sum(
            r["n"] - 1 for r in db["effects"] if r["n"] > 1
        )
        cut = (target - timedelta(seconds=ANCHOR_MARGIN_S)).isoformat()
        hashes = {(r["mode"], int(r["seq"])): r["hash"] for r in db["entries"]}
        early = [
            a
            for a in found["anchors"]
            if a["tenant_id"] == tenant_id and a["seq"] > 0 and _at(a["anchored_at"]) < _at(cut)
        ]
        disagreeing = [a for a in early if hashes.get((a["mode"], a["seq"])) != a["head_hash"]]
        for a in disagreeing[:5]:
            log(f"anchor before T disagreeing: {a}")
        for k in missing[:5]:
            log(f"acknowledged before T, not restored: {k} {acked[k].transfer_id}")
        after = [k for k in acked if k not in before]
        lost_after = sum(k not in rows for k in after)
        log(
            f"acknowledged after T: {len(after)}, of which {lost_after} not restored (what going back to T"
            f" gives up); restored transfers {len(rows)}, journal entries {len(hashes)}"
        )
        discrepancies = rec.get("discrepancies")
        return pitr_audit.PitrFacts(
            target=target.isoformat(),
            acknowledged_before=len(before),
            missing=len(missing),
            duplicated=twice,
            past_target=sum(r["created_at"] > target for r in db["transfers"]),
            unknown=sum(k not in issued for k in rows),
            unbalanced=len(db["unbalanced"]),
            reconcile=len(discrepancies) if isinstance(discrepancies, list) else -1,
            journal_entries=db["journal"],
            verify=verify,
            anchors_before=len(early),
            anchors_disagreeing=len(disagreeing),
        )

    async def _fetchval(self, sql: str, *args: Any) -> Any:
        conn = await asyncpg.connect(pitr_pg.dsn(self.pg, DATABASE))
        try:
            return await conn.fetchval(sql, *args)
        finally:
            await conn.close()

    def stop(self) -> None:
        if self.suite is not None:
            self.suite.stop()
        self.stores.stop()
        self.redis.stop()
        if self.restored is not None:
            self.restored.destroy()
        self.pg.destroy()
        shutil.rmtree(self.work / "pitr", ignore_errors=True)  # the backup and the archive


async def _restored_rows(dsn: str, tenant_id: str) -> dict[str, Any]:
    conn = await asyncpg.connect(dsn)
    try:
        return {
            "transfers": await conn.fetch(
                "SELECT id, idempotency_key, created_at FROM ledger.transfers WHERE tenant_id = $1", tenant_id
            ),
            "effects": await conn.fetch(chaos_audit.ENTRIES_SQL, tenant_id),
            "entries": await conn.fetch(
                "SELECT mode, seq, hash FROM ledger.journal_entries WHERE tenant_id = $1", tenant_id
            ),
            "unbalanced": [
                *await conn.fetch(chaos_audit.UNBALANCED_SQL, tenant_id),
                *await conn.fetch(chaos_audit.BALANCE_SQL, tenant_id),
            ],
            "journal": int(await conn.fetchval("SELECT count(*) FROM ledger.journal_entries")),
        }
    finally:
        await conn.close()


def _lsn(text: str) -> int:
    """A WAL position (``16/B374D848``) as a byte offset."""
    high, low = text.split("/")
    return (int(high, 16) << 32) + int(low, 16)


def _at(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="python -m tools.chaos.pitr.drill", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("--transfers", type=int, default=800)
    ap.add_argument("--rate", type=float, default=40.0, help="transfers issued a second at most")
    ap.add_argument("--clients", type=int, default=12)
    ap.add_argument("--wallets", type=int, default=20)
    ap.add_argument("--brokers", type=int, default=1, help="Apache Kafka nodes")
    ap.add_argument("--target-at", type=float, default=0.5, help="T once this share of the load is decided")
    ap.add_argument(
        "--margin-s", type=float, default=0.25, help="acknowledged this long before T must be there"
    )
    ap.add_argument(
        "--restore-offset-s",
        type=float,
        default=0.0,
        help="a negative control: restore to T plus this (the checks still expect T); -3 must fail",
    )
    ap.add_argument(
        "--deadline-s", type=float, default=60.0, help="a transfer undecided after this is undecided"
    )
    return ap.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse(argv)
    work = Path(tempfile.mkdtemp(prefix="sluice-pitr-"))
    drill = Drill(args, work)
    started = time.monotonic()
    try:
        drill.start()
        return drill.run()
    finally:
        drill.stop()
        log(f"drill took {pitr_pg.elapsed(started)} s")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

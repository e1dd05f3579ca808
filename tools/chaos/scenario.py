"""``make chaos``: the suite under real faults, run as a platform team would.

The suite runs as separate processes (two gateways, ledgers, compliance and webhooks instances,
one admin) on stores this run owns: its own PostgreSQL cluster (a primary and two synchronous
standbys, tools.chaos.pg_cluster; the services are given every node in one multi-host URL), its
own redis-server and a fresh three-node Apache Kafka cluster. A tenant is set up through the API (admin, then
customers, wallets, virtual accounts and sandbox deposits through the gateway) with a webhook
endpoint this process serves. 24 clients book transfers among the funded wallets, each retrying
with the same Idempotency-Key (tools.chaos.clients) while faults are injected as the run
progresses: SIGKILL of each service type in turn (restarted after a few seconds), the store
faults of tools.chaos.failover (the PostgreSQL primary stopped then started, a synchronous
standby lost, the primary lost and a standby promoted by the harness, Redis paused, Valkey
lost and started empty), and on the three-node Apache Kafka cluster a broker SIGKILLed, the
busiest commands partition's leader SIGKILLed, a broker paused (tools.chaos.kafka).

Then an exact audit from the clients' side against the database, ending in one line:
``chaos: transfers N lost N duplicated N undecided N balance_drift X webhooks_missing N
longest_decision_s S`` (exit 1 unless lost, duplicated, undecided, drift and missing are 0),
and for each failover its recovery objectives: ``chaos-failover: rpo N detection_s S rto_s S``
(exit 1 unless RPO is 0 and RTO within ``--rto-limit-s``; docs/operations/failover.md,
"Recovery objectives, as measured").
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
import tempfile
import threading
import time
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx

from common.topics import Topics
from tools.chaos import admin as chaos_admin
from tools.chaos import audit as chaos_audit
from tools.chaos import db as chaos_db
from tools.chaos import scale as chaos_scale
from tools.chaos.args import KILL_ORDER, parse
from tools.chaos.clients import Progress, run_clients
from tools.chaos.failover import StoreFaults
from tools.chaos.kafka import FAULTS as BROKER_FAULTS
from tools.chaos.kafka import BrokerFaults
from tools.chaos.patroni.faults import PatroniFaults, PatroniStore
from tools.chaos.pg_cluster import PgCluster, one_host
from tools.chaos.scale import Scaler
from tools.chaos.stores import OwnRedis
from tools.stack.processes import free_port
from tools.stack.provision import provision
from tools.stack.receiver import Receiver
from tools.stack.stores import Stores
from tools.stack.suite import Proc, Suite, answers_ready, ephemeral_secrets, migrate

TWICE = ("gateway", "ledger", "compliance", "webhooks")
# A restarted service must answer /readyz within this (its start on a loaded machine, Kafka
# group joins included, has taken up to 40 s); later, or exited, it fails the run.
RESTART_READY_S = 120.0
DATABASE = "sluice_chaos"
SCOPES = ["customers:write", "wallets:write", "virtual_accounts:write", "transfers:write", "webhooks:write"]


def log(msg: str) -> None:
    print(f"[chaos {time.strftime('%H:%M:%S')}] {msg}", flush=True)


class Scenario:
    def __init__(self, args: argparse.Namespace, work: Path) -> None:
        self.args, self.work = args, work
        self.redis = OwnRedis(work)
        self.pg: PgCluster | PatroniStore
        self.store_faults: StoreFaults | PatroniFaults
        if args.patroni:  # Patroni and etcd fail PostgreSQL over, as platform teams run it
            self.pg = PatroniStore(work, DATABASE)
            self.store_faults = PatroniFaults(self.pg, self.redis, log, args.pg_stop_s, args.redis_pause_s)
        else:  # the harness fails it over (pg_ctl promote)
            self.pg = PgCluster(work)
            self.store_faults = StoreFaults(
                self.pg, self.redis, log, args.pg_stop_s, args.redis_pause_s, args.failover_detect_s
            )
        self.stores = Stores(work)
        self.suite: Suite | None = None
        self.procs: dict[str, list[Proc]] = {}
        self.kills = 0
        self.restarting: list[tuple[Proc, float]] = []
        self.restarts_not_ready = 0
        self.scaler: Scaler | None = None
        self.last_gate = args.transfers - 1  # the clients' gate never passes it before the last fault ends

    # ---- set-up ----
    def start(self) -> None:
        self.pg.init()
        self.redis.start()
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLUICE_")}
        env |= {"SLUICE_DATABASE_URL": self.pg.url(), "SLUICE_REDIS_URL": self.redis.url}
        self.stores.start(fresh_kafka=True, database=DATABASE, env=env, kafka_nodes=self.args.brokers)
        if isinstance(self.store_faults, PatroniFaults):  # a whole node lost takes a broker too
            self.store_faults.kafka_nodes = self.stores.kafka_nodes
        log(
            f"stores: pg primary {self.pg.primary.address} standbys "
            f"{', '.join(n.address for n in self.pg.standbys)}, redis {self.redis.url}, "
            f"kafka {self.stores.kafka_bootstrap} ({self.stores.kafka_kind})"
        )
        senv = {
            **ephemeral_secrets("chaos"),
            **self.stores.service_env(),
            "SLUICE_REDIS_URL": self.redis.url,
            "SLUICE_WEBHOOKS_ALLOW_PRIVATE_TARGETS": "true",
            "SLUICE_WEBHOOKS_RETRY_SCHEDULE": "1,2,4,8,15,30",
            "SLUICE_WEBHOOKS_JITTER": "0",
            "SLUICE_SANDBOX_SETTLE_S": "1",
            "SLUICE_DB_POOL_SIZE": "5",
            "SLUICE_LOG_LEVEL": "INFO",
        }
        if self.args.pg_single_host:  # the negative control: the services know only the primary
            address = self.pg.primary.address
            senv = {
                k: one_host(v, address) if k.startswith("SLUICE_DATABASE_URL") else v for k, v in senv.items()
            }
            log(f"the services are given only {address}, not the standbys")
        migrate(senv)
        self.suite = Suite(senv, self.work / "logs")
        for name in (*TWICE, "admin"):
            n = 2 if name in TWICE and not self.args.scale else 1
            self.procs[name] = [self.suite.start(name, free_port(), instance=f"{name}-{i}") for i in range(n)]
        self.suite.wait_ready(timeout=300)
        log(f"suite ready; logs in {self.work / 'logs'}")

    @property
    def token(self) -> str:
        assert self.suite is not None
        return self.suite.env["SLUICE_ADMIN_TOKEN"]

    def gateways(self) -> list[str]:
        return [p.url for p in self.procs["gateway"]]

    # ---- faults ----
    def kill(self, name: str) -> None:
        assert self.suite is not None
        i = self.kills // len(KILL_ORDER) % len(self.procs[name])
        self.kills += 1
        proc = self.procs[name][i]
        log(f"fault: SIGKILL {name}-{i} (pid {proc.popen.pid})")
        self.suite.stop_proc(proc, signal.SIGKILL)
        time.sleep(self.args.restart_after_s)
        new = self.suite.start(name, proc.port, instance=f"{name}-{i}")
        self.procs[name][i] = new
        self.restarting.append((new, time.monotonic()))
        log(f"{name}-{i} restarted (pid {new.popen.pid})")

    def poll_restarts(self) -> None:
        """Log when each restarted process answers /readyz (without holding up the next fault:
        the restart happens on this thread, which the children's parent-death signal follows);
        one that exits or is not ready within RESTART_READY_S is counted, and fails the run."""
        for proc, since in list(self.restarting):
            ready = False
            with contextlib.suppress(httpx.HTTPError):
                ready = answers_ready(proc)
            waited = time.monotonic() - since
            outcome = chaos_audit.restart_outcome(ready, proc.popen.poll(), waited, RESTART_READY_S)
            if outcome is None:
                continue
            state = "ready" if outcome else f"NOT ready (exit code {proc.popen.poll()})"
            log(f"{proc.log.stem} {state} {waited:.1f} s after its restart")
            self.restarts_not_ready += not outcome
            self.restarting.remove((proc, since))

    def plan(self) -> list[tuple[str, Any]]:
        faults = set(self.args.faults.split(",")) if self.args.faults else set()
        kills = [KILL_ORDER[i % len(KILL_ORDER)] for i in range(self.args.kills)] if "kill" in faults else []
        if self.args.kill_only:
            kills = [self.args.kill_only] * self.args.kills if "kill" in faults else []
        steps: list[tuple[str, Any]] = [(f"kill {k}", lambda k=k: self.kill(k)) for k in kills]
        for at, label, act in self.store_faults.steps(faults):
            steps.insert(min(at, len(steps)), (label, act))
        brokers = (
            BrokerFaults(self.stores.kafka_nodes, Topics().ledger_commands, log)
            if faults & set(BROKER_FAULTS)
            else None
        )
        for i, step in enumerate(brokers.steps(faults) if brokers else []):
            steps.insert(min(1 + 3 * i, len(steps)), step)  # spread among the others
        return steps

    def in_flight(self, progress: Progress, margin: int, clients: threading.Thread) -> None:
        """Transfers in flight when a fault fires: a long fault before it (a node lost, then
        rejoined) may have let the clients reach the gate and every transfer be decided; the
        gate is then lifted by ``margin`` and the fault waits (10 s at most) for half of it."""
        if progress.issued - progress.decided >= margin // 2 or progress.gate is None:
            return
        progress.gate = min(progress.issued + margin, self.last_gate)
        deadline = time.monotonic() + 10
        while (
            progress.issued - progress.decided < margin // 2
            and progress.issued < progress.gate
            and clients.is_alive()
            and time.monotonic() < deadline
        ):
            time.sleep(0.05)

    # ---- the run ----
    def run(self) -> int:
        args = self.args
        receiver = Receiver(free_port())
        key, wallets = asyncio.run(
            provision(
                self.gateways()[0],
                self.procs["admin"][0].url,
                self.token,
                args.wallets,
                scopes=SCOPES,
                funding="10000.00",
            )
        )
        tenant_id = asyncio.run(chaos_db.tenant_of(self.stores.database_url, wallets[0]))
        r = httpx.post(
            self.gateways()[0] + "/v1/webhooks",
            json={"endpoint_url": receiver.url},
            headers={"Authorization": f"Bearer {key}", "Idempotency-Key": uuid.uuid4().hex},
            timeout=30,
        )
        if r.status_code != 201:
            raise RuntimeError(f"webhook registration refused: {r.status_code} {r.text[:300]}")
        before = asyncio.run(chaos_db.balances(self.stores.database_url, tenant_id))
        log(f"tenant {tenant_id}: {len(wallets)} funded wallets, webhook endpoint {receiver.url}")
        progress = Progress(args.transfers)
        run_id = uuid.uuid4().hex[:8]
        gateways = self.gateways()  # the load balancer's list: the scaling plan changes it
        clients = threading.Thread(
            target=lambda: asyncio.run(
                run_clients(gateways, key, wallets, progress, args.clients, args.deadline_s, run_id)
            ),
            daemon=True,
        )
        assert self.suite is not None
        self.scaler = Scaler(self.suite, self.procs, gateways, log)
        steps = self.scaler.plan() if args.scale else self.plan()
        # Fault n fires once ``threshold(n)`` transfers are decided, or as soon as the clients
        # have issued ``threshold(n) + margin`` and wait at the gate (a fast suite): either
        # way with transfers in flight, and never after the load has ended: the last
        # ``reserve`` transfers are sent only once the last fault is over (a failover's RTO
        # needs requests sent after the promotion; the short variant has few to spare).
        margin = args.clients
        reserve = min(margin // 2, args.transfers // 10)
        self.last_gate = args.transfers - max(1, reserve)

        def threshold(n: int) -> int:
            return args.transfers * n // (len(steps) + 1)

        def gate_of(n: int) -> int:
            return min(threshold(n) + margin, self.last_gate)

        progress.gate = gate_of(1) if steps else None
        fired = 0
        t0 = time.monotonic()
        clients.start()
        for n, (label, act) in enumerate(steps, 1):
            threshold_n = threshold(n)
            waiting = time.monotonic()
            gate = progress.gate or args.transfers
            while progress.decided < threshold_n and progress.issued < gate and clients.is_alive():
                self.poll_restarts()
                time.sleep(0.2)
                if time.monotonic() - waiting > 10:
                    waiting = time.monotonic()
                    log(f"{progress.decided}/{args.transfers} decided (next fault at {threshold_n})")
            if not clients.is_alive():
                log(f"clients finished before fault {label!r}")
                break
            self.in_flight(progress, margin, clients)
            log(
                f"{progress.decided}/{args.transfers} decided, {progress.issued - progress.decided} in flight"
            )
            # The load goes on while the fault lasts (a standby lost must not stop the writes,
            # and only new transfers show it), up to the next fault's threshold: never so far
            # that a long fault lets the clients finish what the later faults need in flight.
            progress.gate = min(threshold(n + 1), self.last_gate) if n < len(steps) else self.last_gate
            act()
            fired += 1
            progress.gate = gate_of(n + 1) if n < len(steps) else None
        progress.gate = None
        log(f"faults fired: {fired} of {len(steps)}")
        last = 0.0
        while clients.is_alive() or self.restarting:
            clients.join(0.5)
            self.poll_restarts()
            if time.monotonic() - last > 5:
                last = time.monotonic()
                log(f"{progress.decided}/{args.transfers} decided")
        took = time.monotonic() - t0
        log(
            f"load done in {took:.0f} s ({progress.decided / took:.1f} decisions/s); answers seen: "
            + ", ".join(f"{k} x{v}" for k, v in sorted(progress.answers.items()))
        )
        return asyncio.run(self.audit(tenant_id, progress, receiver, before, len(steps) - fired))

    async def audit(
        self, tenant_id: str, p: Progress, receiver: Receiver, before: dict[str, Decimal], missed: int
    ) -> int:
        want = {b.transfer_id for b in p.bookings if b.transfer_id and b.status and b.status < 300}
        deadline = time.monotonic() + self.args.webhook_grace_s
        while time.monotonic() < deadline and not want <= set(receiver.created):  # noqa: ASYNC110
            await asyncio.sleep(0.5)
        url, admin = self.stores.database_url, self.procs["admin"][0].url
        got = await chaos_db.read(url, tenant_id)
        node = ", ".join(n.name for n in self.pg.nodes if n.port == got.port)
        log(f"audit read from {node}, the primary now")
        after = await chaos_db.balances(url, tenant_id)
        reconciled = await chaos_admin.reconcile(admin, self.token, tenant_id, log)
        entries = await chaos_db.journal_entries(url)
        chain_broken = await chaos_admin.verify_journal(admin, self.token, entries, log)
        slow_s = self.args.slow_s or 0.75 * self.args.deadline_s
        ids = receiver.ids
        found = chaos_audit.audit(
            p.bookings, got.rows, got.entries, before, after, ids, len(got.broken), len(got.dead), slow_s
        )
        found.reconcile_discrepancies = reconciled
        found.journal_chain_broken = chain_broken
        found.faults_missed = missed
        found.restarts_not_ready = self.restarts_not_ready
        for line in chaos_audit.explain(found, p.bookings, got.rows, got.broken, got.dead):
            log(line)
        quiet = time.monotonic() - receiver.last_at if receiver.last_at else float("inf")
        log(
            f"webhooks: {receiver.deliveries} deliveries, {sum(receiver.created.values())} "
            f"transfer.created ({sum(len(i) for i in receiver.ids.values())} distinct event ids) "
            f"for {len(receiver.created)} transfers; the last delivery came {quiet:.1f} s before "
            "the audit" + (" (still arriving: late, not necessarily lost)" if quiet < 5 else "")
        )
        for line in found.lines():
            print(line, flush=True)
        committed = [str(r["id"]) for r in got.rows]
        recovered = True
        for fault, lost_at, promoted_at in self.store_faults.failovers:
            rec = chaos_audit.recovery(
                p.bookings, committed, p.attempts, lost_at, promoted_at, self.args.rto_limit_s, fault
            )
            print(rec.line(), flush=True)
            recovered = recovered and rec.ok
        if self.args.scale:
            assert self.scaler is not None
            for change in chaos_scale.pauses_by_change(p.bookings, self.scaler.changes):
                log(change)
            pause, _ = chaos_scale.longest_pause(p.bookings)
            print(chaos_scale.line(found.transfers, found.lost, found.duplicated, found.undecided, pause))
        return 0 if found.clean and recovered else 1

    def stop(self) -> None:
        if self.suite is not None:
            self.suite.stop()
        self.stores.stop()
        self.redis.stop()
        self.pg.destroy()


def main(argv: list[str]) -> int:
    args = parse(argv, __doc__.split("\n\n")[0])
    work = Path(tempfile.mkdtemp(prefix="sluice-chaos-"))
    scenario = Scenario(args, work)
    try:
        scenario.start()
        return scenario.run()
    finally:
        scenario.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

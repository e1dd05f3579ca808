"""A PostgreSQL cluster failed over by Patroni with etcd as its DCS: what
:mod:`tools.chaos.pg_cluster` does by hand, done the way platform teams run it.

Three nodes, each a ``patroni <config.yml>`` agent (its own process, run as the same
unprivileged user as pg_cluster when we are root: PostgreSQL refuses root) managing a data
directory with the pgserver wheel's binaries (``postgresql.bin_dir``), a PostgreSQL port and a
REST API port (``/primary`` answers 200 on the leader only, ``/replica`` on a streaming replica).
The first agent to take the leader key in etcd runs ``initdb``; the others clone it
(``pg_basebackup``) and stream from it.

- **Synchronous replication**: ``synchronous_mode: quorum`` with ``synchronous_node_count: 1``:
  Patroni keeps ``synchronous_standby_names = 'ANY 1 (...)'`` over the healthy replicas and
  only promotes a replica that the quorum guarantees holds every acknowledged commit; losing
  one standby does not stop the writes.
- **Timing** (``DCS``, small for tests): ``ttl`` 20 s (Patroni's minimum), ``loop_wait`` 1 s,
  ``retry_timeout`` 5 s (``loop_wait + 2 * retry_timeout <= ttl``). A lost leader's key expires
  at most ``ttl`` after its last renewal: that is the detection time.
- **Faults**: :meth:`lose_node` SIGKILLs the agent AND its PostgreSQL (postmaster and
  children): killing PostgreSQL alone is not a lost node, the agent would start it again in
  place. :meth:`switchover` is the planned change (``POST /switchover`` on the leader).
  :meth:`start_node` brings a lost node's agent back: it rejoins as a replica (``pg_rewind``
  when its timeline diverged).
- :meth:`leader_key` reads the leader key from etcd itself (the v3 JSON gateway): the moment
  it names another node is the promotion's start.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import subprocess  # the tools start local processes  # nosec B404
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tools.chaos.patroni.node import (
    NODES,
    SCOPE,
    PatroniError,
    PatroniNode,
    as_system_user,
    http_json,
    patroni_argv,
    patroni_env,
)
from tools.chaos.pg_cluster import _alive, _children, one_host
from tools.chaos.stores import PG_USER, SYSTEM_USER, psql
from tools.stack.processes import die_with_parent

__all__ = ["NODES", "PatroniCluster", "PatroniError", "PatroniNode"]


@dataclass
class PatroniCluster:
    workdir: Path
    etcd_hosts: list[str]
    database: str = "postgres"
    nodes: list[PatroniNode] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.nodes:
            self.nodes = [PatroniNode(name, self.workdir / "patroni" / name) for name in NODES]

    def node(self, name: str) -> PatroniNode:
        return next(n for n in self.nodes if n.name == name)

    # ---- URLs ----
    def url(self, database: str | None = None) -> str:
        """The services' URL (SQLAlchemy, asyncpg driver): every node, writes only to the one
        that accepts them (as :meth:`tools.chaos.pg_cluster.PgCluster.url`)."""
        query = "&".join(f"host={n.address}" for n in self.nodes)
        db = database or self.database
        return f"postgresql+asyncpg://{PG_USER}@/{db}?{query}&target_session_attrs=read-write"

    def dsn(self, database: str | None = None) -> str:
        """The same for a plain libpq or asyncpg client."""
        hosts = ",".join(n.address for n in self.nodes)
        return f"postgresql://{PG_USER}@{hosts}/{database or self.database}?target_session_attrs=read-write"

    # ---- agents ----
    def start(self, timeout: float = 120.0) -> PatroniCluster:
        """Every agent started; returns once there is a leader and both replicas stream."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.workdir.chmod(0o755)  # the unprivileged user must reach its directories
        (self.workdir / "patroni").mkdir(exist_ok=True)
        (self.workdir / "patroni").chmod(0o755)
        for n in self.nodes:
            self.start_node(n.name)
        self.wait_leader(timeout)
        self.wait_replicas(len(self.nodes) - 1, timeout)
        return self

    def start_node(self, name: str) -> None:
        """Start ``name``'s agent (again): a lost node rejoins as a replica."""
        n = self.node(name)
        n.home.mkdir(parents=True, exist_ok=True)
        conf = n.home / "patroni.yml"
        conf.write_text(json.dumps(n.config(self.etcd_hosts), indent=1))  # JSON is YAML
        if os.geteuid() == 0:
            for path in (n.home, conf):
                shutil.chown(path, SYSTEM_USER, SYSTEM_USER)
        n.home.chmod(0o700)
        log = n.log_file.open("ab")
        n.proc = subprocess.Popen(  # a local interpreter, argv list, no shell  # nosec B603
            [*patroni_argv(), str(conf)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=patroni_env(n.home),
            cwd=n.home,
            preexec_fn=die_with_parent,  # noqa: PLW1509 - the kernel stops it with us
            **as_system_user(),
        )
        log.close()
        n.lost = False

    def members(self) -> list[dict[str, Any]]:
        """``GET /cluster`` from the first agent that answers: name, role, state, lag, ..."""
        for n in self.nodes:
            if n.lost:
                continue
            code, body = http_json(f"{n.api}/cluster", timeout=1.0)
            if code == 200 and isinstance(body, dict):
                return list(body.get("members", []))
        return []

    def leader(self) -> str | None:
        """The node whose ``/primary`` answers 200 (a running, writable leader)."""
        for n in self.nodes:
            if not n.lost and http_json(f"{n.api}/primary", timeout=1.0)[0] == 200:
                return n.name
        return None

    def wait_leader(self, timeout: float = 60.0, other_than: str | None = None) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._check_alive()
            name = self.leader()
            if name is not None and name != other_than:
                return name
            time.sleep(0.2)
        raise PatroniError(f"no leader within {timeout:.0f} s: {self.members()} ({self._tails()})")

    def wait_replicas(self, count: int, timeout: float = 60.0) -> list[str]:
        """Until ``count`` replicas stream (``/replica`` 200 and state streaming)."""
        deadline = time.monotonic() + timeout
        seen: list[str] = []
        while time.monotonic() < deadline:
            self._check_alive()
            # The member list comes from etcd, where a lost node's key stays "streaming" until
            # its TTL expires: a replica counts only once its own agent answers /replica too.
            seen = [
                str(m["name"])
                for m in self.members()
                if m.get("role") in ("replica", "sync_standby", "quorum_standby")
                and m.get("state") == "streaming"
                and self._answers_replica(str(m["name"]))
            ]
            if len(seen) >= count:
                return seen
            time.sleep(0.3)
        raise PatroniError(f"not {count} streaming replicas within {timeout:.0f} s: {self.members()}")

    def _answers_replica(self, name: str) -> bool:
        n = next((n for n in self.nodes if n.name == name), None)
        return n is not None and not n.lost and http_json(f"{n.api}/replica", timeout=1.0)[0] == 200

    def leader_key(self) -> str | None:
        """The leader key's value in etcd (the leader's name), None when it has none: read from
        etcd itself, not from an agent, so an expiry is seen as it happens."""
        key = base64.b64encode(f"/service/{SCOPE}/leader".encode()).decode()
        for host in self.etcd_hosts:
            code, body = http_json(f"http://{host}/v3/kv/range", {"key": key}, timeout=1.0)
            if code == 200 and isinstance(body, dict):
                kvs = body.get("kvs") or []
                return base64.b64decode(kvs[0]["value"]).decode() if kvs else None
        raise PatroniError(f"etcd does not answer at {self.etcd_hosts}")

    def wait_key_change(self, old: str, timeout: float = 90.0) -> tuple[str, float]:
        """The leader key's next holder other than ``old``, and when it was first seen (polled
        every 50 ms): the promotion's start, for the recovery objectives."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(PatroniError):
                holder = self.leader_key()
                if holder is not None and holder != old:
                    return holder, time.monotonic()
            time.sleep(0.05)
        raise PatroniError(f"the leader key still names {old} (or none) after {timeout:.0f} s")

    def prepare(self, database: str) -> dict[str, str]:
        """``database`` and its services' roles, as tools.stack.stores makes them for make chaos:
        SLUICE_DATABASE_URL and each role's URL (tools.stack.suite.ROLE_URL), all multi-host."""
        from tools.stack.stores import ROLE_URL, create_roles

        url = self.create(database)
        roles = create_roles(url, database)
        return {"SLUICE_DATABASE_URL": url, **{ROLE_URL + who.upper(): u for who, u in roles.items()}}

    def create(self, database: str) -> str:
        """``database`` created on the leader and present on every replica; its multi-host URL."""
        from tools.stack.stores import create_database

        leader = self.leader()
        if leader is None:
            raise PatroniError("no leader to create the database on")
        create_database(one_host(self.url(), self.node(leader).address), database)
        # asyncpg tries the next host of a multi-host URL only when one does not answer (or is
        # starting up): a replica that has not replayed CREATE DATABASE yet ends the connect
        # with "database does not exist". Wait for every replica before anyone uses the URL.
        self.wait_database(database)
        return self.url(database)

    def sql(self, n: PatroniNode, statement: str, timeout: float = 10.0) -> str:
        """``statement`` on ``n``'s ``postgres`` database (psql over TCP)."""
        done = psql(n.port, statement, timeout)
        if done.returncode != 0:
            raise PatroniError(f"{n.name}: {statement[:60]}: {done.stderr.strip()[-300:]}")
        return done.stdout.strip()

    def wait_database(self, database: str, timeout: float = 60.0) -> None:
        """Until every node not lost has ``database`` (replicas replay CREATE DATABASE)."""
        deadline = time.monotonic() + timeout
        waiting = [n.name for n in self.nodes if not n.lost]
        while waiting and time.monotonic() < deadline:
            for name in list(waiting):
                with contextlib.suppress(PatroniError, subprocess.TimeoutExpired):
                    query = f"SELECT 1 FROM pg_database WHERE datname = '{database}'"  # noqa: S608
                    if self.sql(self.node(name), query) == "1":
                        waiting.remove(name)
            if waiting:
                time.sleep(0.2)
        if waiting:
            raise PatroniError(f"{', '.join(waiting)} without database {database} after {timeout:.0f} s")

    # ---- faults ----
    def lose_node(self, name: str) -> None:
        """SIGKILL ``name``'s agent and its PostgreSQL (postmaster and every child) together:
        the machine is lost. The agent first, so nothing starts PostgreSQL again."""
        n = self.node(name)
        n.lost = True
        pids: list[int] = []
        if n.proc is not None and n.proc.poll() is None:
            pids.append(n.proc.pid)
            with contextlib.suppress(ProcessLookupError):
                os.kill(n.proc.pid, signal.SIGKILL)
        postmaster = n.postmaster_pid()
        if postmaster is not None and _alive(postmaster):
            children = _children(postmaster)
            for pid in (postmaster, *children):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            pids += [postmaster, *children]
        if n.proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                n.proc.wait(timeout=10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(_alive(p) for p in pids):
            time.sleep(0.05)

    def switchover(self, candidate: str | None = None) -> str:
        """A planned switchover (``POST /switchover`` on the leader; Patroni picks the
        candidate unless named); returns the new leader's name once it accepts writes."""
        old = self.leader()
        if old is None:
            raise PatroniError("no leader to switch over from")
        body: dict[str, Any] = {"leader": old}
        if candidate:
            body["candidate"] = candidate
        code, reply = http_json(f"{self.node(old).api}/switchover", body, timeout=60.0)
        if code != 200:
            raise PatroniError(f"switchover from {old} refused: {code} {reply}")
        return self.wait_leader(60.0, other_than=old)

    def stop(self) -> None:
        """Every agent stopped (SIGTERM: Patroni stops its PostgreSQL), then anything left
        SIGKILLed."""
        for n in self.nodes:
            if n.proc is not None and n.proc.poll() is None:
                n.proc.send_signal(signal.SIGTERM)
        for n in self.nodes:
            if n.proc is not None:
                try:
                    n.proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    self.lose_node(n.name)
            postmaster = n.postmaster_pid()
            if postmaster is not None and _alive(postmaster):
                self.lose_node(n.name)

    def destroy(self) -> None:
        self.stop()
        shutil.rmtree(self.workdir / "patroni", ignore_errors=True)

    def _check_alive(self) -> None:
        for n in self.nodes:
            if not n.lost and n.proc is not None and n.proc.poll() is not None:
                raise PatroniError(f"patroni {n.name} exited {n.proc.returncode}: {self._tails()}")

    def _tails(self) -> str:
        out = []
        for n in self.nodes:
            with contextlib.suppress(OSError):
                out.append(
                    f"{n.name}: " + " | ".join(n.log_file.read_text(errors="replace").splitlines()[-2:])
                )
        return "; ".join(out)

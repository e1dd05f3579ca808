"""A PostgreSQL cluster the fault runs can fail over (docs/operations/failover.md): a primary and
two synchronous standbys streaming from it, each its own data directory and port, from the same
binaries as :class:`tools.chaos.stores.OwnPostgres` (the pgserver wheel's; ``SLUICE_PG_BIN``
may name another bin) and run as the same unprivileged user when we are root.

- **Replication**: each standby is a ``pg_basebackup -R`` of the primary and streams from it
  under its node name (``application_name``). ``synchronous_standby_names = 'ANY 1 (pg0, pg1,
  pg2)'`` with ``synchronous_commit = on``: a commit returns once one standby has flushed it,
  so losing one standby does not stop the writes, and an acknowledged commit is on at least one
  standby (every node is named, so a node rebuilt as a standby counts again).
- **Failover** is the harness's, as an operator or Patroni would do it: :meth:`kill` a node
  (SIGKILL of its postmaster and every child: a lost machine), :meth:`promote` the standby that
  received the most WAL (with ``ANY 1`` only one standby may hold the last commits: promoting
  the other would lose them), then :meth:`repoint` the other standby at the new primary (it
  follows the new timeline: ``recovery_target_timeline`` is ``latest``). The new primary waits
  for a synchronous standby before it answers a commit, so the re-point is part of the
  recovery. :meth:`rebuild` makes a lost node a standby of the current primary again (a fresh
  base backup: nothing of the old primary's data is kept, so it cannot come back as a writer).
- **The services' URL**: :meth:`url` lists every node in the libpq multi-host form with
  ``target_session_attrs=read-write``; ``url(only=node)`` names one node (the negative control:
  a service given only the old primary's address does not find the new one).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess  # the tools start local processes  # nosec B404
import time
from dataclasses import dataclass, field
from pathlib import Path

from tools.chaos.stores import PG_USER, SYSTEM_USER, as_postgres, pg_bin, psql
from tools.stack.processes import free_port, wait_port

NODES = ("pg0", "pg1", "pg2")
SETTINGS = {
    "listen_addresses": "'127.0.0.1'",
    "max_connections": "400",
    "fsync": "off",  # a lost node is a killed process here, never a lost page cache
    "synchronous_commit": "on",
    "synchronous_standby_names": "'ANY 1 (" + ", ".join(NODES) + ")'",
    "wal_keep_size": "'512MB'",  # a standby restarted after a while catches up from the primary
    "wal_retrieve_retry_interval": "'500ms'",  # a standby retries its primary twice a second
    "wal_receiver_timeout": "'10s'",
    "wal_sender_timeout": "'10s'",
    "hot_standby": "on",
}


class ClusterError(RuntimeError):
    pass


def one_host(url: str, address: str) -> str:
    """``url`` naming only ``address`` (``host:port``): what a service given a single node sees."""
    from sqlalchemy.engine import make_url

    u = make_url(url)
    return u.set(query={**u.query, "host": address}).render_as_string(hide_password=False)


@dataclass
class PgNode:
    name: str
    home: Path
    port: int = field(default_factory=free_port)
    lost: bool = False  # killed and not rebuilt

    @property
    def data(self) -> Path:
        return self.home / "data"

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def conninfo(self, application_name: str) -> str:
        return f"host=127.0.0.1 port={self.port} user={PG_USER} application_name={application_name}"


@dataclass
class PgCluster:
    workdir: Path
    database: str = "postgres"
    nodes: list[PgNode] = field(default_factory=list)
    primary_name: str = NODES[0]

    def __post_init__(self) -> None:
        if not self.nodes:
            self.nodes = [PgNode(name, self.workdir / "pgha" / name) for name in NODES]

    # ---- naming ----
    def node(self, name: str) -> PgNode:
        return next(n for n in self.nodes if n.name == name)

    @property
    def primary(self) -> PgNode:
        return self.node(self.primary_name)

    @property
    def standbys(self) -> list[PgNode]:
        return [n for n in self.nodes if n.name != self.primary_name and not n.lost]

    def url(self, only: str | None = None, database: str | None = None) -> str:
        """The services' URL: every node (libpq multi-host form, writes only to the node that
        accepts them), or ``only`` that node's address."""
        hosts = [self.node(only)] if only else self.nodes
        query = "&".join(f"host={n.address}" for n in hosts)
        db = database or self.database
        return f"postgresql+asyncpg://{PG_USER}@/{db}?{query}&target_session_attrs=read-write"

    # ---- set-up ----
    def init(self) -> PgCluster:
        """initdb the primary, start it, then a base backup for each standby; returns once both
        standbys stream and one of them is synchronous."""
        self.workdir.chmod(0o755)  # postgres must reach its directory
        for n in self.nodes:
            self._own(n.home)
        first = self.primary
        initdb = str(pg_bin() / "initdb")
        as_postgres(initdb, "-D", str(first.data), "-A", "trust", "-U", PG_USER, "--no-sync")
        with (first.data / "postgresql.conf").open("a") as conf:
            conf.write("\n# tools.chaos.pg_cluster\n" + "".join(f"{k} = {v}\n" for k, v in SETTINGS.items()))
        self.start(first)
        for n in self.standbys:
            self._base_backup(n)
        self.wait_synchronous(len(self.standbys))
        return self

    def _own(self, path: Path) -> None:
        path.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(path, SYSTEM_USER, SYSTEM_USER)

    def _base_backup(self, n: PgNode) -> None:
        """``n`` becomes a standby of the current primary: a fresh base backup, then started."""
        shutil.rmtree(n.data, ignore_errors=True)
        self._own(n.home)
        src = self.primary
        as_postgres(
            str(pg_bin() / "pg_basebackup"),
            *("-h", "127.0.0.1", "-p", str(src.port), "-U", PG_USER),
            *("-D", str(n.data), "-R", "-X", "stream", "-c", "fast", "--no-sync"),
        )
        with (n.data / "postgresql.auto.conf").open("a") as conf:  # the last setting wins
            conf.write(f"primary_conninfo = '{src.conninfo(n.name)}'\n")
        self.start(n)
        n.lost = False

    def start(self, n: PgNode) -> None:
        """Start ``n``. A killed postmaster's lock files go first: its pid may still be a
        zombie (a container whose init does not reap), which PostgreSQL takes for a live one."""
        pid = self._postmaster_pid(n)
        if pid is not None and not _alive(pid):
            (n.data / "postmaster.pid").unlink(missing_ok=True)
        for lock in n.home.glob(".s.PGSQL.*.lock"):
            holder = int(lock.read_text().split("\n", 1)[0] or 0)
            if not _alive(holder):
                lock.unlink(missing_ok=True)
        opts = f"-p {n.port} -k {n.home}"
        as_postgres(
            str(pg_bin() / "pg_ctl"), "-D", str(n.data), "-l", str(n.home / "log"), "-o", opts, "-w", "start"
        )
        wait_port("127.0.0.1", n.port)

    # ---- queries (psql over TCP: no event loop needed, callable from any thread) ----
    def sql(self, n: PgNode, statement: str, timeout: float = 10.0) -> str:
        done = psql(n.port, statement, timeout)
        if done.returncode != 0:
            raise ClusterError(f"{n.name}: {statement[:60]}: {done.stderr.strip()[-300:]}")
        return done.stdout.strip()

    def streaming(self) -> dict[str, str]:
        """The standbys streaming from the primary: application_name -> sync_state."""
        sql = "SELECT application_name, sync_state FROM pg_stat_replication WHERE state = 'streaming'"
        out = self.sql(self.primary, sql)
        return dict(line.split("|", 1) for line in out.splitlines() if "|" in line)

    def wait_synchronous(self, standbys: int, timeout: float = 60.0) -> None:
        """Until ``standbys`` standbys stream from the primary and one is synchronous."""
        deadline = time.monotonic() + timeout
        seen: dict[str, str] = {}
        while time.monotonic() < deadline:
            with contextlib.suppress(ClusterError, subprocess.TimeoutExpired):
                seen = self.streaming()
                if len(seen) >= standbys and {"sync", "quorum"} & set(seen.values()):
                    return
            time.sleep(0.2)
        raise ClusterError(f"not {standbys} synchronous standbys within {timeout:.0f} s: {seen}")

    def received_lsn(self, n: PgNode) -> int:
        """How far ``n`` has received (or replayed) the WAL, as a number."""
        out = self.sql(
            n,
            "SELECT greatest(coalesce(pg_last_wal_receive_lsn(), '0/0'),"
            " coalesce(pg_last_wal_replay_lsn(), '0/0')) - '0/0'::pg_lsn",
        )
        return int(out)

    # ---- faults and recovery ----
    def kill(self, name: str) -> None:
        """SIGKILL ``name``'s postmaster and every process of it: the node is lost."""
        n = self.node(name)
        pid = self._postmaster_pid(n)
        n.lost = True
        if pid is None:
            return
        children = _children(pid)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        for child in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(_alive(p) for p in (pid, *children)):
            time.sleep(0.05)

    def pause(self, name: str, sig: int = signal.SIGSTOP) -> None:
        """SIGSTOP ``name``'s postmaster and every process of it: a hung node, whose kernel
        still accepts connections that nothing answers (``resume``: SIGCONT)."""
        pid = self._postmaster_pid(self.node(name))
        for p in (pid, *_children(pid)) if pid is not None else ():
            with contextlib.suppress(ProcessLookupError):
                os.kill(p, sig)

    def resume(self, name: str) -> None:
        self.pause(name, signal.SIGCONT)

    def _postmaster_pid(self, n: PgNode) -> int | None:
        try:
            return int((n.data / "postmaster.pid").read_text().split("\n", 1)[0])
        except (OSError, ValueError):
            return None

    def most_advanced_standby(self) -> PgNode:
        """The live standby that received the most WAL: the one that holds every commit the
        lost primary acknowledged (ANY 1: maybe only this one)."""
        live = [n for n in self.standbys if self._postmaster_pid(n) is not None]
        if not live:
            raise ClusterError("no standby left to promote")
        return max(live, key=self.received_lsn)

    def promote(self, name: str) -> None:
        """``pg_ctl promote`` (waits until the node accepts writes); it is the primary now."""
        n = self.node(name)
        as_postgres(str(pg_bin() / "pg_ctl"), "-D", str(n.data), "-w", "-t", "60", "promote")
        self.primary_name = name

    def repoint(self, name: str) -> None:
        """The standby ``name`` streams from the current primary (a reload: no restart)."""
        n = self.node(name)
        self.sql(n, f"ALTER SYSTEM SET primary_conninfo = '{self.primary.conninfo(n.name)}'")
        self.sql(n, "SELECT pg_reload_conf()")

    def failover(self) -> tuple[str, list[str]]:
        """The primary is lost (killed, or hung: :meth:`pause`): promote the most advanced
        standby and re-point the others at it; (promoted, re-pointed)."""
        self.primary.lost = True  # dead or hung, it is out of the cluster until rebuilt
        chosen = self.most_advanced_standby()
        self.promote(chosen.name)
        others = [n.name for n in self.standbys]
        for other in others:
            with contextlib.suppress(ClusterError, subprocess.TimeoutExpired):  # left for rebuild
                self.repoint(other)
        return chosen.name, others

    def stop(self, name: str, mode: str = "fast") -> None:
        """``pg_ctl stop``: ``fast`` rolls back running transactions and cuts every session (an
        operator's restart). A stop that did not happen raises."""
        n = self.node(name)
        as_postgres(str(pg_bin() / "pg_ctl"), "-D", str(n.data), "-m", mode, "-w", "stop")

    def restart(self, name: str) -> None:
        """Start a killed standby again from its own data (it catches up, then streams)."""
        n = self.node(name)
        pid = self._postmaster_pid(n)
        if pid is not None and _alive(pid):
            return
        self.start(n)
        n.lost = False

    def rebuild(self, name: str) -> None:
        """A lost node comes back as a standby of the current primary, from a fresh base
        backup (its old data, maybe ahead of the new timeline, is dropped)."""
        self._base_backup(self.node(name))

    def destroy(self) -> None:
        for n in self.nodes:
            pid = self._postmaster_pid(n)
            if pid is not None and _alive(pid):
                self.kill(n.name)
        shutil.rmtree(self.workdir / "pgha", ignore_errors=True)


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    state = Path(f"/proc/{pid}/stat")
    with contextlib.suppress(OSError):
        return state.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    return True


def _children(pid: int) -> list[int]:
    """Every process whose parent is ``pid`` (PostgreSQL's backends and workers)."""
    out: list[int] = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(stat.parent.name))
    return out

"""Stores the chaos scenario can break: a PostgreSQL of its own (initdb and pg_ctl run as the
``postgres`` user on a directory it owns, on a free port) that can be stopped and started, and
a ``redis-server`` without persistence that can be paused (SIGSTOP/SIGCONT) or stopped."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from devstack.stores import free_port, wait_port
from devstack.suite import die_with_parent

PG_BIN = Path(os.environ.get("SLUICE_PG_BIN", "/usr/lib/postgresql/15/bin"))
PG_USER = "postgres"


def _as_postgres(*cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    run_as = [] if os.geteuid() != 0 else ["runuser", "-u", PG_USER, "--"]
    return subprocess.run([*run_as, *cmd], check=check, capture_output=True, text=True, timeout=120)


@dataclass
class OwnPostgres:
    workdir: Path
    port: int = field(default_factory=free_port)

    @property
    def home(self) -> Path:
        return self.workdir / "pg"

    @property
    def data(self) -> Path:
        return self.home / "data"

    @property
    def url(self) -> str:
        return f"postgresql+asyncpg://{PG_USER}@127.0.0.1:{self.port}/postgres"

    def init(self) -> OwnPostgres:
        self.home.mkdir(parents=True, exist_ok=True)
        self.workdir.chmod(0o755)  # postgres must reach its directory
        if os.geteuid() == 0:
            shutil.chown(self.home, PG_USER, PG_USER)
        _as_postgres(str(PG_BIN / "initdb"), "-D", str(self.data), "-A", "trust", "-U", PG_USER, "--no-sync")
        self.start()
        return self

    def start(self) -> None:
        opts = (
            f"-p {self.port} -k {self.home} -c listen_addresses=127.0.0.1 -c max_connections=400"
            " -c fsync=off -c full_page_writes=off"
        )
        _as_postgres(
            str(PG_BIN / "pg_ctl"),
            "-D",
            str(self.data),
            "-l",
            str(self.home / "log"),
            "-o",
            opts,
            "-w",
            "start",
        )
        wait_port("127.0.0.1", self.port)

    def stop(self, mode: str = "fast") -> None:
        """``fast``: running transactions are rolled back and every session is cut (what an
        operator's restart does); ``immediate``: like a crash."""
        _as_postgres(str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop", check=False)

    def destroy(self) -> None:
        self.stop("immediate")
        shutil.rmtree(self.home, ignore_errors=True)


@dataclass
class OwnRedis:
    workdir: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> OwnRedis:
        exe = shutil.which("redis-server") or shutil.which("valkey-server")
        if exe is None:
            raise RuntimeError("redis-server not found (apt-get install -y redis-server)")
        log = open(self.workdir / "redis.log", "ab")  # noqa: SIM115 - the server's output
        self.proc = subprocess.Popen(
            [exe, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=die_with_parent,
        )
        wait_port("127.0.0.1", self.port)
        return self

    def pause(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGCONT)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.proc.pid, signal.SIGCONT)
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

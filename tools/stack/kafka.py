"""Apache Kafka without Docker: one pinned broker fetched from Maven Central, run as ``java``.

``make setup`` runs ``python -m tools.stack.kafka fetch``: Maven copies
``org.apache.kafka:kafka_2.13`` and the log4j2 binding the release tarball adds (log4j is
compile-only in the broker's POM; Kafka 4 still logs through slf4j 1.7, hence
``log4j-slf4j-impl``) into a cache outside the tree, keyed by version, once.

:class:`KafkaNode` is one KRaft node in its own process (so a fault run can SIGKILL or SIGSTOP
it and the suite's load cannot starve it inside a shared JVM): storage formatted with the
cluster id, logs under the stack's work directory, ready when the broker says it started and
its listener answers. :func:`single_node` is the combined broker+controller every test, bench
and ``make run`` shares; :func:`cluster` three nodes for the fault runs (replication 3,
``min.insync.replicas`` 2). With ``sasl_users`` a node takes SASL/PLAIN on every listener
(users in a JAAS file in its directory, mode 0600) and authorizes every request by ACL
(``common.acls``; ``BROKER_USER`` the only super user): tests/integration/test_kafka_acls.py.

The version is pinned here, and only here for the tooling: compose.yaml, deploy/k8s and the
testcontainers path name the same image tag (tests/unit/test_kafka_version.py compares them).
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import os
import shutil
import subprocess  # the tools start local processes  # nosec B404
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from tools.stack.processes import die_with_parent, free_port, port_open

KAFKA_VERSION = "4.1.2"
#: The log4j release Kafka 4.1 is built against (its gradle/dependencies.gradle).
LOG4J_VERSION = "2.24.3"
#: The container image of the same release (compose.yaml, deploy/k8s, testcontainers).
KAFKA_IMAGE = f"apache/kafka:{KAFKA_VERSION}"
#: A SASL node's own principal (brokers and controller), its only super user.
BROKER_USER = "broker"

# Sized for two cores: the scripts' defaults are a 1 GB heap, 8 I/O and 3 network threads.
JVM_FLAGS = [
    "-Xms128m",
    "-Xmx512m",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:+ExitOnOutOfMemoryError",
    "-XX:CICompilerCount=2",
    "-Djava.awt.headless=true",
]
#: The JIT's first tier only: a one-shot tool, or a broker whose life is a test session. Such a
#: broker spent about half its CPU in C2 compiling (four integration files: 25.6 CPU-s with both
#: tiers, 13.8 with C1 alone, the same wall time); its load is too light to repay C2's code.
QUICK_JIT = "-XX:TieredStopAtLevel=1"
#: ``c1`` (tests/conftest.py sets it for the session and the chaos runs it starts): brokers use
#: :data:`QUICK_JIT`. Unset, as for make run and make bench, a broker compiles as a deployed one.
JIT_SETTING = "SLUICE_KAFKA_JIT"


def jvm_flags() -> list[str]:
    return [*JVM_FLAGS, QUICK_JIT] if os.environ.get(JIT_SETTING) == "c1" else list(JVM_FLAGS)


_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>sluice.devstack</groupId><artifactId>kafka-broker</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId>
      <version>{kafka}</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-api</artifactId>
      <version>{log4j}</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-core</artifactId>
      <version>{log4j}</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j-impl</artifactId>
      <version>{log4j}</version></dependency>
  </dependencies>
</project>
"""

_LOG4J = """Configuration:
  Appenders:
    File:
      name: F
      fileName: "{file}"
      PatternLayout: {{pattern: "[%d] %p %m (%c)%n"}}
  Loggers:
    Logger:
      - {{name: kafka.request.logger, level: WARN}}
      - {{name: org.apache.kafka.controller, level: INFO}}
    Root: {{level: INFO, AppenderRef: [{{ref: F}}]}}
"""


class KafkaUnavailable(RuntimeError):
    """No JDK or Maven here, or the fetch failed: says which, in one line."""


def cache_dir() -> Path:
    base = os.environ.get("SLUICE_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "sluice"
    )
    return Path(base) / f"kafka-{KAFKA_VERSION}"


def java() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and Path(home, "bin", "java").exists():
        return str(Path(home, "bin", "java"))
    return shutil.which("java")


def missing() -> str:
    """What this machine lacks to run the embedded broker ('' when nothing)."""
    if java() is None:
        return "no java (OpenJDK 17+) on PATH or in JAVA_HOME"
    if not (cache_dir() / "libs" / ".complete").exists() and shutil.which("mvn") is None:
        return f"no mvn on PATH to fetch Apache Kafka {KAFKA_VERSION} from Maven Central"
    return ""


def fetch(quiet: bool = True) -> Path:
    """The broker's jars, fetched once into the cache (a lock keeps parallel fetches apart)."""
    libs = cache_dir() / "libs"
    if (libs / ".complete").exists():
        return libs
    why = missing()
    if why:
        raise KafkaUnavailable(why)
    libs.parent.mkdir(parents=True, exist_ok=True)
    with open(libs.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (libs / ".complete").exists():
            return libs
        with tempfile.TemporaryDirectory(dir=libs.parent) as tmp:
            pom = Path(tmp, "pom.xml")
            pom.write_text(_POM.format(kafka=KAFKA_VERSION, log4j=LOG4J_VERSION))
            out = Path(tmp, "libs")
            cmd = [str(shutil.which("mvn")), "-B", "-q", "-f", str(pom)]
            cmd += ["dependency:copy-dependencies", f"-DoutputDirectory={out}"]
            done = subprocess.run(cmd, capture_output=True, text=True, check=False)  # nosec B603
            if done.returncode != 0 or not any(out.glob(f"kafka_2.13-{KAFKA_VERSION}.jar")):
                tail = (done.stdout + done.stderr).strip().splitlines()[-3:]
                raise KafkaUnavailable(
                    f"mvn could not fetch Apache Kafka {KAFKA_VERSION}: {' | '.join(tail)}"
                )
            (out / ".complete").write_text(KAFKA_VERSION)
            if libs.exists():
                shutil.rmtree(libs)
            out.rename(libs)
    return libs


def cluster_id() -> str:
    """A KRaft cluster id: a random UUID, base64url without padding (22 characters)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


@dataclass
class KafkaNode:
    """One KRaft node (broker and controller) in a ``java`` process of its own."""

    node_id: int
    port: int
    controller_port: int
    workdir: Path
    voters: str = ""  # "1@127.0.0.1:p1,2@...": a multi-node quorum; '' = a single standalone node
    replicas: int = 1
    #: SASL/PLAIN users (name: password) with ACLs enforced; None = PLAINTEXT, no authorizer.
    #: ``BROKER_USER`` must be one of them: the node's own principal, the only super user.
    sasl_users: dict[str, str] | None = field(default=None, repr=False)
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    _mark: int = field(default=0, repr=False)  # the log's size at the last launch

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def log_file(self) -> Path:
        return self.workdir / "logs" / "server.log"

    def properties(self) -> str:
        isr = min(2, self.replicas)
        quorum = (
            f"controller.quorum.voters={self.voters}"
            if self.voters
            else f"controller.quorum.bootstrap.servers=127.0.0.1:{self.controller_port}"
        )
        name = "SASL_PLAINTEXT" if self.sasl_users is not None else "PLAINTEXT"
        listeners = f"{name}://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}"
        lines = [
            "process.roles=broker,controller",
            f"node.id={self.node_id}",
            quorum,
            f"listeners={listeners}",
            f"advertised.listeners={listeners}",
            "controller.listener.names=CONTROLLER",
            f"inter.broker.listener.name={name}",
            f"listener.security.protocol.map=CONTROLLER:{name},{name}:{name}",
            *self._sasl_properties(),
            f"log.dirs={self.workdir / 'data'}",
            f"default.replication.factor={self.replicas}",
            f"min.insync.replicas={isr}",
            f"offsets.topic.replication.factor={self.replicas}",
            "offsets.topic.num.partitions=1",
            f"transaction.state.log.replication.factor={self.replicas}",
            f"transaction.state.log.min.isr={isr}",
            f"share.coordinator.state.topic.replication.factor={self.replicas}",
            f"share.coordinator.state.topic.min.isr={isr}",
            # A group's first member does not wait 3 s for others (testcontainers does the same).
            "group.initial.rebalance.delay.ms=0",
            # The active controller appends a no-op record to the metadata log every 500 ms by
            # default (KIP-835: a liveness signal for the metadata lag metrics, not for
            # elections or fencing); every 5 s, an idle broker took 5.4-5.7 % of a core instead
            # of 6.1-6.5 % (make bench's idle part, 2026-11-26).
            "metadata.max.idle.interval.ms=5000",
            "num.network.threads=2",
            "num.io.threads=2",
            "num.recovery.threads.per.data.dir=1",
            "background.threads=2",
            "log.cleaner.dedupe.buffer.size=1048577",
            "log.cleaner.threads=1",
            # Topics the suite creates itself carry retention (python -m sluice topics); reply
            # and test topics made on first use keep one day.
            "log.retention.hours=24",
            "log.segment.bytes=67108864",
        ]
        return "\n".join(lines) + "\n"

    def _sasl_properties(self) -> list[str]:
        """Every listener (clients, brokers, the controller) takes SASL/PLAIN, and every request
        is authorized by ACL: no principal but the node's own has a right it was not granted."""
        if self.sasl_users is None:
            return []
        return [
            "sasl.enabled.mechanisms=PLAIN",
            "sasl.mechanism.inter.broker.protocol=PLAIN",
            "sasl.mechanism.controller.protocol=PLAIN",
            "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            f"super.users=User:{BROKER_USER}",
            "allow.everyone.if.no.acl.found=false",
        ]

    @property
    def jaas_file(self) -> Path:
        return self.workdir / "kafka_server_jaas.conf"

    def _write_jaas(self) -> None:
        """The PLAIN users (``user_<name>="<password>"``) and the node's own login, in a file
        only this user reads (the JVM is pointed at it: ``java.security.auth.login.config``)."""
        users = self.sasl_users or {}
        if BROKER_USER not in users:
            raise ValueError(f"sasl_users must include {BROKER_USER!r}, the node's own principal")

        def quoted(v: str) -> str:
            return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'

        entries = [f"username={quoted(BROKER_USER)}", f"password={quoted(users[BROKER_USER])}"]
        entries += [f"user_{name}={quoted(pw)}" for name, pw in sorted(users.items())]
        body = "KafkaServer {\n  org.apache.kafka.common.security.plain.PlainLoginModule required\n"
        body += "\n".join(f"  {e}" for e in entries) + ";\n};\n"
        fd = os.open(self.jaas_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(body)

    def start(self, cluster: str, libs: Path) -> None:
        (self.workdir / "logs").mkdir(parents=True, exist_ok=True)
        props = self.workdir / "server.properties"
        props.write_text(self.properties())
        if self.sasl_users is not None:
            self._write_jaas()
        log4j = self.workdir / "log4j2.yaml"
        log4j.write_text(_LOG4J.format(file=self.log_file))
        cp = f"{libs}/*"
        if not (self.workdir / "data" / "meta.properties").exists():
            fmt = [str(java()), "-Xmx256m", QUICK_JIT, f"-Dlog4j2.configurationFile={log4j}", "-cp", cp]
            # --cluster-id=: an id may begin with "-" (base64url), which a separate argument would be
            # taken for an option ("expected one argument", about 1 start in 64)
            fmt += ["kafka.tools.StorageTool", "format", f"--cluster-id={cluster}", "-c", str(props)]
            fmt += [] if self.voters else ["--standalone"]
            for attempt in (1, 2):  # seen once in a loaded full run: a format that failed, then passed
                done = subprocess.run(fmt, capture_output=True, text=True, check=False)  # nosec B603
                out = (done.stdout + done.stderr).strip()
                (self.workdir / "logs" / f"format-{attempt}.log").write_text(
                    f"exit {done.returncode}\n{out}\n"
                )
                if done.returncode == 0:
                    break
                shutil.rmtree(self.workdir / "data", ignore_errors=True)
            else:
                raise KafkaUnavailable(f"kafka-storage format failed (exit {done.returncode}): {out[-1000:]}")
        self.launch(libs)

    def launch(self, libs: Path) -> None:
        """Start (or restart, after a kill) the node's process on its formatted storage."""
        out = open(self.workdir / "logs" / "stdout.log", "ab")  # noqa: SIM115 - the child owns it
        cmd = [str(java()), *jvm_flags(), f"-Dlog4j2.configurationFile={self.workdir / 'log4j2.yaml'}"]
        cmd += [f"-Dkafka.logs.dir={self.workdir / 'logs'}", "-cp", f"{libs}/*"]
        if self.sasl_users is not None:
            cmd.insert(1, f"-Djava.security.auth.login.config={self.jaas_file}")
        cmd += ["kafka.Kafka", str(self.workdir / "server.properties")]
        self._mark = self.log_file.stat().st_size if self.log_file.exists() else 0
        self.proc = subprocess.Popen(  # a local broker, argv list, no shell  # nosec B603
            cmd, stdout=out, stderr=out, start_new_session=True, preexec_fn=die_with_parent
        )

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Ready when the broker logs it started (after its metadata caught up) and listens."""

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise KafkaUnavailable(f"Apache Kafka node {self.node_id} exited: see {self.log_file}")
            with contextlib.suppress(OSError), open(self.log_file, "rb") as f:
                f.seek(self._mark)
                if b"Kafka Server started" in f.read() and port_open("127.0.0.1", self.port):
                    return
            time.sleep(0.1)
        raise TimeoutError(f"Apache Kafka node {self.node_id} not ready in {timeout}s: see {self.log_file}")

    def stop(self, timeout: float = 20.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, 15)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, 9)
            self.proc.wait(5)


def _nodes(workdir: Path, count: int, sasl_users: dict[str, str] | None = None) -> list[KafkaNode]:

    ports = [(free_port(), free_port()) for _ in range(count)]
    voters = ",".join(f"{i + 1}@127.0.0.1:{c}" for i, (_, c) in enumerate(ports)) if count > 1 else ""
    return [
        KafkaNode(
            i + 1,
            p,
            c,
            workdir / f"kafka-{i + 1}",
            voters=voters,
            replicas=min(count, 3),
            sasl_users=sasl_users,
        )
        for i, (p, c) in enumerate(ports)
    ]


def start_nodes(
    workdir: Path, count: int = 1, timeout: float = 90.0, *, sasl_users: dict[str, str] | None = None
) -> list[KafkaNode]:
    """``count`` nodes of a fresh cluster, started together (a quorum needs a majority);
    with ``sasl_users`` (which must hold ``BROKER_USER``) every listener takes SASL/PLAIN and
    every request needs an ACL (``common.acls``)."""
    libs = fetch()
    nodes, cid = _nodes(workdir, count, sasl_users), cluster_id()
    try:
        for n in nodes:
            n.start(cid, libs)
        for n in nodes:
            n.wait_ready(timeout)
    except BaseException:
        for n in nodes:
            n.stop()
        raise
    return nodes


def main(argv: list[str]) -> int:
    if argv[:1] != ["fetch"]:
        print("usage: python -m tools.stack.kafka fetch", file=sys.stderr)
        return 2
    if (cache_dir() / "libs" / ".complete").exists():
        return 0
    why = missing()
    if why:
        print(f"embedded Apache Kafka unavailable: {why}; the stack falls back to Tansu", file=sys.stderr)
        return 0
    began = time.monotonic()
    fetch()
    print(f"fetched Apache Kafka {KAFKA_VERSION} into {cache_dir()} in {time.monotonic() - began:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

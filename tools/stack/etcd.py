"""etcd without Docker: one pinned release built from the Go module proxy, run as ``etcd``.

Patroni's DCS for the failover drill (:mod:`tools.chaos.patroni.cluster`). ``python -m
tools.stack.etcd build`` builds ``go.etcd.io/etcd/server/v3`` at the pinned release (the
server module's main package is the ``etcd`` binary; ``go install module@version`` refuses it
for its replace directives, so a throw-away wrapper module requires it and ``go build`` names
it) into a cache outside the tree keyed by version, once, as :mod:`tools.stack.kafka`
caches the broker's jars: a lock keeps parallel builds apart and the binary is renamed into
place only when the build succeeded. ``SLUICE_ETCD`` may name another ``etcd`` binary;
``SLUICE_GO`` another ``go``.

:class:`EtcdNode` is one member in its own process (so a drill can SIGKILL it): data directory
under the caller's work directory, client and peer ports free ports on 127.0.0.1, ready when
``/health`` answers ``true``. :func:`single_node` is what the drill uses; :func:`cluster` three
members (a quorum of two), should a drill need to lose the DCS' own node.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess  # the tools start local processes  # nosec B404
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from tools.stack.processes import die_with_parent, free_port

ETCD_VERSION = "3.6.16"
ETCD_MODULE = "go.etcd.io/etcd/server/v3"


class EtcdUnavailable(RuntimeError):
    """No Go toolchain here, or the build failed: says which, in one line."""


def cache_dir() -> Path:
    base = os.environ.get("SLUICE_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "sluice"
    )
    return Path(base) / f"etcd-{ETCD_VERSION}"


def go() -> str | None:
    if os.environ.get("SLUICE_GO"):
        return os.environ["SLUICE_GO"]
    return shutil.which("go") or next((g for g in ("/usr/local/go/bin/go",) if Path(g).exists()), None)


def binary() -> Path:
    """Where the ``etcd`` binary is (or will be once built)."""
    if os.environ.get("SLUICE_ETCD"):
        return Path(os.environ["SLUICE_ETCD"])
    return cache_dir() / "etcd"


def missing() -> str:
    """What this machine lacks to run the embedded etcd ('' when nothing)."""
    if binary().exists():
        return ""
    if go() is None:
        return f"no go on PATH (or SLUICE_GO) to build etcd {ETCD_VERSION}, and none cached"
    return ""


def build() -> Path:
    """The ``etcd`` binary, built once into the cache (minutes of CPU: run under the helpers'
    stack lock when the machine is shared)."""
    target = binary()
    if target.exists():
        return target
    toolchain = go()
    if toolchain is None:
        raise EtcdUnavailable(missing())
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.exists():
            return target
        with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
            # ``go install module@version`` refuses a module whose go.mod has replace
            # directives (etcd's point at its sibling modules): build it from a wrapper module
            # that requires it, its siblings resolved at the same release.
            Path(tmp, "go.mod").write_text(
                f"module sluice.devstack/etcd\n\ngo 1.24\n\nrequire {ETCD_MODULE} v{ETCD_VERSION}\n"
            )
            env = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-mod=mod"}
            built = Path(tmp, "etcd")
            for cmd in (
                [toolchain, "get", f"{ETCD_MODULE}@v{ETCD_VERSION}"],
                [toolchain, "build", "-trimpath", "-o", str(built), ETCD_MODULE],
            ):
                done = subprocess.run(cmd, env=env, cwd=tmp, capture_output=True, text=True, check=False)  # nosec B603
                if done.returncode != 0:
                    tail = (done.stdout + done.stderr).strip().splitlines()[-3:]
                    raise EtcdUnavailable(f"go could not build etcd {ETCD_VERSION}: {' | '.join(tail)}")
            built.rename(target)
    return target


@dataclass
class EtcdNode:
    """One etcd member in a process of its own."""

    name: str
    workdir: Path
    client_port: int = field(default_factory=free_port)
    peer_port: int = field(default_factory=free_port)
    initial_cluster: str = ""  # "e0=http://127.0.0.1:p0,...": a multi-member cluster; '' = alone
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def client_url(self) -> str:
        return f"http://127.0.0.1:{self.client_port}"

    @property
    def peer_url(self) -> str:
        return f"http://127.0.0.1:{self.peer_port}"

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.client_port}"

    @property
    def log_file(self) -> Path:
        return self.workdir / "etcd.log"

    def argv(self) -> list[str]:
        return [
            str(binary()),
            *("--name", self.name, "--data-dir", str(self.workdir / "data")),
            *("--listen-client-urls", self.client_url, "--advertise-client-urls", self.client_url),
            *("--listen-peer-urls", self.peer_url, "--initial-advertise-peer-urls", self.peer_url),
            "--initial-cluster",
            self.initial_cluster or f"{self.name}={self.peer_url}",
            *("--initial-cluster-state", "new", "--initial-cluster-token", "sluice-devstack"),
            # Sized for a shared two-core test machine, not for production: a short heartbeat
            # and election timeout (a lost member is noticed in about a second), no fsync
            # batching worries (the data is thrown away), a small backend.
            *("--heartbeat-interval", "100", "--election-timeout", "1000"),
            *("--quota-backend-bytes", str(256 * 1024 * 1024), "--log-level", "warn"),
            "--unsafe-no-fsync",
        ]

    def start(self) -> EtcdNode:
        self.workdir.mkdir(parents=True, exist_ok=True)
        log = self.log_file.open("ab")
        self.proc = subprocess.Popen(  # a local binary, argv list, no shell  # nosec B603
            self.argv(), stdout=log, stderr=subprocess.STDOUT, preexec_fn=die_with_parent
        )
        log.close()
        return self

    def healthy(self) -> bool:
        health = f"{self.client_url}/health"
        with contextlib.suppress(OSError, ValueError), urllib.request.urlopen(health, timeout=1) as reply:  # nosec B310
            return bool(json.loads(reply.read()).get("health") == "true")
        return False

    def wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise EtcdUnavailable(f"etcd {self.name} exited {self.proc.returncode}: {self._tail()}")
            if self.healthy():
                return
            time.sleep(0.1)
        raise EtcdUnavailable(f"etcd {self.name} not healthy within {timeout:.0f} s: {self._tail()}")

    def _tail(self) -> str:
        with contextlib.suppress(OSError):
            return " | ".join(self.log_file.read_text(errors="replace").strip().splitlines()[-3:])
        return ""

    def kill(self) -> None:
        self.stop(signal.SIGKILL)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)


@dataclass
class EtcdCluster:
    members: list[EtcdNode]

    @property
    def hosts(self) -> list[str]:
        """``host:port`` of every member's client listener (Patroni's ``etcd3.hosts``)."""
        return [m.address for m in self.members]

    def stop(self) -> None:
        for m in self.members:
            m.stop()


def single_node(workdir: Path) -> EtcdCluster:
    """One member, started and healthy."""
    build()
    node = EtcdNode("e0", workdir / "etcd" / "e0").start()
    node.wait_ready()
    return EtcdCluster([node])


def cluster(workdir: Path, size: int = 3) -> EtcdCluster:
    """``size`` members forming one cluster, started and healthy."""
    build()
    members = [EtcdNode(f"e{i}", workdir / "etcd" / f"e{i}") for i in range(size)]
    initial = ",".join(f"{m.name}={m.peer_url}" for m in members)
    for m in members:
        m.initial_cluster = initial
        m.start()
    for m in members:
        m.wait_ready()
    return EtcdCluster(members)


def main(argv: list[str]) -> int:
    """``build``: the cached binary's path (built if missing); ``smoke``: start one member,
    check its health, stop it."""
    what = argv[0] if argv else "build"
    try:
        started = time.monotonic()
        path = build()
        print(f"etcd {ETCD_VERSION}: {path} ({time.monotonic() - started:.1f} s)")
        if what == "smoke":
            with tempfile.TemporaryDirectory(prefix="sluice-etcd-") as tmp:
                etcd = cluster(Path(tmp), int(argv[1])) if len(argv) > 1 else single_node(Path(tmp))
                print(f"etcd {ETCD_VERSION}: healthy at {','.join(etcd.hosts)}")
                etcd.stop()
    except EtcdUnavailable as exc:
        print(f"etcd: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

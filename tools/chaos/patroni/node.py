"""One Patroni node of :mod:`tools.chaos.patroni.cluster`: its configuration (the DCS settings the
first node writes to etcd at bootstrap, its own ports and directories), how its agent is run
(as the unprivileged user when we are root), and the REST API client the cluster uses.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess  # the tools start local processes  # nosec B404
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tools.chaos.pg_cluster import PgNode
from tools.chaos.stores import PG_USER, SYSTEM_USER, pg_bin
from tools.stack.processes import free_port

NODES = ("pg0", "pg1", "pg2")
SCOPE = "sluice"
DCS = {
    "ttl": 20,
    "loop_wait": 1,
    "retry_timeout": 5,
    "maximum_lag_on_failover": 1024 * 1024,  # a replica this far behind (bytes) is never promoted
    "synchronous_mode": "quorum",
    "synchronous_node_count": 1,
    "postgresql": {
        "use_pg_rewind": True,  # a lost leader rejoins as a replica, its diverged WAL rewound
        "use_slots": True,
        "parameters": {
            "max_connections": 400,
            "fsync": "off",  # a lost node is a killed process here, never a lost page cache
            "wal_keep_size": "512MB",
            "wal_log_hints": "on",  # pg_rewind needs it (or data checksums)
            "hot_standby": "on",
            "wal_receiver_timeout": "10s",
            "wal_sender_timeout": "10s",
            "wal_retrieve_retry_interval": "500ms",
        },
    },
}
HBA = [
    "local all all trust",
    "host all all 127.0.0.1/32 trust",
    "host replication all 127.0.0.1/32 trust",
]


class PatroniError(RuntimeError):
    pass


def _others_can_run(path: Path) -> bool:
    """Whether a user other than the owner may execute ``path`` (every directory above it
    searchable by others): the venv's interpreter may live under a private ``/root``."""
    real = path.resolve()
    return all(p.stat().st_mode & 0o001 for p in (real, *real.parents))


def patroni_argv() -> list[str]:
    """How to run Patroni: ``python -m patroni`` with this venv's packages. When we are root
    the unprivileged user may not reach this interpreter (pyenv's under ``/root``): then a
    system interpreter of the same minor version (``SLUICE_PATRONI_PYTHON`` may name one)
    with the venv's site-packages on ``PYTHONPATH`` (see :func:`patroni_env`)."""
    python = Path(sys.executable)
    if os.geteuid() == 0 and not _others_can_run(python):
        minor = f"python{sys.version_info.major}.{sys.version_info.minor}"
        other = os.environ.get("SLUICE_PATRONI_PYTHON") or shutil.which(minor, path="/usr/local/bin:/usr/bin")
        if other is None or not _others_can_run(Path(other)):
            raise PatroniError(f"no {minor} the user {SYSTEM_USER} may run (set SLUICE_PATRONI_PYTHON)")
        # -S: not the system's dist-packages (its pyOpenSSL breaks against the venv's urllib3)
        return [other, "-S", "-m", "patroni"]
    return [str(python), "-m", "patroni"]


def patroni_env(home: Path) -> dict[str, str]:
    import sysconfig

    paths = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    return {
        **os.environ,
        "HOME": str(home),
        "PYTHONPATH": os.pathsep.join(sorted(paths)),
        "PYTHONNOUSERSITE": "1",
    }


def as_system_user() -> dict[str, Any]:
    """``Popen`` arguments that run a child as the unprivileged user when we are root."""
    if os.geteuid() != 0:
        return {}
    from pgserver.utils import ensure_user_exists

    ensure_user_exists(SYSTEM_USER)
    return {"user": SYSTEM_USER, "group": SYSTEM_USER, "extra_groups": []}


def http_json(url: str, body: dict[str, Any] | None = None, timeout: float = 2.0) -> tuple[int, Any]:
    """(status, decoded body) of a GET (or a POST of ``body``); status 0 when unreachable."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method="POST" if data else "GET")  # noqa: S310
    req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as reply:  # nosec B310 - our own 127.0.0.1
            raw = reply.read()
            status = reply.status
    except urllib.error.HTTPError as exc:
        raw, status = exc.read(), exc.code
    except (OSError, ValueError):
        return 0, None
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw.decode(errors="replace")


@dataclass
class PatroniNode(PgNode):
    """A PostgreSQL node (its name, data directory, port, whether it was lost) run by a
    Patroni agent with a REST API of its own."""

    api_port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def api(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    @property
    def log_file(self) -> Path:
        return self.home / "patroni.log"

    def config(self, etcd_hosts: list[str]) -> dict[str, Any]:
        return {
            "scope": SCOPE,
            "name": self.name,
            "log": {"level": "INFO"},
            "restapi": {
                "listen": f"127.0.0.1:{self.api_port}",
                "connect_address": f"127.0.0.1:{self.api_port}",
            },
            "etcd3": {"hosts": etcd_hosts, "protocol": "http"},
            "bootstrap": {"dcs": DCS, "initdb": [{"encoding": "UTF8"}, "no-sync"], "pg_hba": HBA},
            "postgresql": {
                "listen": self.address,
                "connect_address": self.address,
                "data_dir": str(self.data),
                "bin_dir": str(pg_bin()),
                "pgpass": str(self.home / "pgpass"),
                "authentication": {
                    "superuser": {"username": PG_USER},
                    "replication": {"username": "replicator"},
                    "rewind": {"username": PG_USER},
                },
                "parameters": {"unix_socket_directories": str(self.home)},
                "pg_hba": HBA,
            },
            "watchdog": {"mode": "off"},  # no /dev/watchdog here; see docs/operations/failover.md
            "tags": {"nofailover": False, "noloadbalance": False, "clonefrom": False},
        }

    def postmaster_pid(self) -> int | None:
        try:
            return int((self.data / "postmaster.pid").read_text().split("\n", 1)[0])
        except (OSError, ValueError):
            return None

    def status(self) -> dict[str, Any]:
        """The agent's ``GET /patroni`` (role, state, timeline), {} when it does not answer."""
        code, body = http_json(f"{self.api}/patroni", timeout=1.0)
        return body if code and isinstance(body, dict) else {}

"""Who may read what on a ``make run`` stack (docs/security.md, "make run's custody"): each
service's secrets are handed to it as files (``SLUICE_SECRETS_DIR``, the way deploy/k8s mounts
them), never in its environment, and when the stack runs as root each service runs as an OS
user of its own (``sluice-<service>``) that alone can read its files.

Without root (a laptop, as a person) every process is that person: the secrets still travel
as files, in directories only that user reads, but one service's process could read another's
files. That is the laptop stack's stated limit, not something this module can lift.

Layout under the stack's state directory (``.sluice/`` for make run)::

    services/              root's, 0711: every service user may pass, none may list it
      <instance>/          HOME of the instance's process, 0700, its user's
        secrets/           SLUICE_SECRETS_DIR, 0500, its user's
          SLUICE_...       one file per secret setting, 0400, its user's

The embedded PostgreSQL listens on a socket in its data directory (pgserver, no TCP): that
directory is given to the group ``sluice``, which every service user belongs to, as 0710
(PostgreSQL accepts a data directory without group read; the group may only reach the
socket, which still asks each role's password).
"""

from __future__ import annotations

import contextlib
import grp
import os
import pwd
import shutil
import site
import subprocess  # the tools start local processes  # nosec B404
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tools.stack.processes import ROOT

#: The group every service user is in: the one that may reach the embedded PostgreSQL's socket.
GROUP = "sluice"
#: The settings a service is given as files, never in its environment: every secret of
#: common.settings, and the three store credentials (each a URL or password of its own).
STORE_CREDENTIALS = ("SLUICE_DATABASE_URL", "SLUICE_REDIS_URL", "SLUICE_KAFKA_SASL_PASSWORD")


def user_of(service: str) -> str:
    return f"sluice-{service}"


def file_settings() -> frozenset[str]:
    from common.settings import SECRET_SETTINGS, SERVICE_SECRETS

    return frozenset(SECRET_SETTINGS.values()).union(*SERVICE_SECRETS.values(), STORE_CREDENTIALS)


def reachable(path: Path) -> bool:
    """Whether a user other than the owner may reach ``path``: every directory above it lets
    others pass (o+x)."""
    return all(os.stat(parent).st_mode & 0o001 for parent in path.resolve().parents)


def service_python(state: Path) -> tuple[str, str]:
    """(an interpreter the service users can run with this environment's packages, '') or
    ('', why there is none). This one when others can reach it; else the system's interpreter of
    the same version given this environment's site-packages (a venv of it under ``state``):
    pyenv and uv keep their interpreters in the home directory, which only its owner may pass
    (``/root`` is 0700)."""
    mine = Path(sys.executable)
    if reachable(mine.resolve()) and reachable(Path(sys.base_prefix) / "lib"):
        return sys.executable, ""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    system = shutil.which(version, path="/usr/local/bin:/usr/bin:/bin")
    if system is None or not reachable(Path(system).resolve()):
        return "", f"{mine.resolve()} is not reachable by other users and there is no system {version}"
    venv = state / "python"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([system, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True)  # nosec B603
    packages = [p for p in site.getsitepackages() if Path(p).is_dir()]
    if not all(reachable(Path(p) / "x") for p in packages):
        return "", f"this environment's packages ({', '.join(packages)}) are not reachable by other users"
    lines = "".join(f"import site; site.addsitedir({p!r})\n" for p in packages)
    (venv / "lib" / version / "site-packages" / "sluice-environment.pth").write_text(lines)
    return str(python), ""


def can_separate() -> bool:
    """Whether this process may give each service an OS user of its own: root, with useradd."""
    return os.geteuid() == 0 and shutil.which("useradd") is not None and shutil.which("groupadd") is not None


def ensure_user(name: str) -> None:
    """A system user ``name`` with a group of its own and in :data:`GROUP`, made if missing:
    no home, no login shell, no password."""
    if not _group_exists(GROUP):
        subprocess.run(["groupadd", "--system", GROUP], check=True, capture_output=True)  # nosec B603 B607
    if not _user_exists(name):
        cmd = ["useradd", "--system", "--user-group", "--no-create-home", "--groups", GROUP]
        cmd += ["--shell", "/usr/sbin/nologin", "--home-dir", "/nonexistent", name]
        subprocess.run(cmd, check=True, capture_output=True)  # nosec B603 B607


def _group_exists(name: str) -> bool:
    try:
        grp.getgrnam(name)
        return True
    except KeyError:
        return False


def _user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


@dataclass
class Custody:
    """Hands each service process its secrets as files and, when ``separate``, its own user."""

    state: Path
    separate: bool
    python: str = sys.executable  # what the services run: one their users can reach
    why_shared: str = ""  # why every service runs as this process's user, when it does

    @classmethod
    def for_this_process(cls, state: Path) -> Custody:
        """A user per service when this process is root and the services' interpreter is
        reachable by other users; else every service as this process's user (and why)."""
        if not can_separate():
            return cls(state, False, why_shared="not root")
        state.mkdir(parents=True, exist_ok=True)
        for where in (state, ROOT / "libs" / "x"):  # the state directory itself is made 0711
            if not reachable(where):
                return cls(state, False, why_shared=f"{where} is not reachable by other users")
        python, why = service_python(state)
        if not python:
            return cls(state, False, why_shared=why)
        return cls(state, True, python)

    @property
    def root(self) -> Path:
        return self.state / "services"

    def prepare(self, services: tuple[str, ...], database_url: str = "") -> None:
        """The users (when ``separate``), the services' directory, and the embedded database's
        socket directory opened to :data:`GROUP`. The state directory itself becomes 0711: its
        files (the saved keys, the broker's and Valkey's passwords, the logs) are root's."""
        self.state.mkdir(parents=True, exist_ok=True)
        self.root.mkdir(exist_ok=True)
        if not self.separate:
            os.chmod(self.root, 0o700)
            return
        for service in services:
            ensure_user(user_of(service))
        # others may pass to their own directory below, never list these
        os.chmod(self.state, 0o711)  # nosec B103
        os.chmod(self.root, 0o711)  # nosec B103
        (self.state / "logs").mkdir(exist_ok=True)
        for private in ("logs", "kafka"):
            with contextlib.suppress(FileNotFoundError):
                os.chmod(self.state / private, 0o700)
        socket_dir = embedded_socket_dir(database_url, self.state)
        if socket_dir is not None:
            os.chown(socket_dir, -1, grp.getgrnam(GROUP).gr_gid)
            os.chmod(socket_dir, 0o710)  # the group passes to the socket, lists nothing  # nosec B103

    def hand_over(
        self, instance: str, service: str, env: dict[str, str]
    ) -> tuple[dict[str, str], dict[str, Any]]:
        """``env`` without its secret settings, which are written as files readable by
        ``service``'s process alone (``SLUICE_SECRETS_DIR``), and the ``subprocess.Popen``
        arguments that start it as its own user (none when not ``separate``)."""
        secret = file_settings()
        home = self.root / instance
        files = home / "secrets"
        if files.is_dir():  # its owner may empty it again only once it may write it
            os.chmod(files, 0o700)
        shutil.rmtree(home, ignore_errors=True)  # a fresh set each start: nothing stale stays
        files.mkdir(parents=True, mode=0o700)
        os.chmod(home, 0o700)
        for name, value in env.items():
            if name in secret and value:
                fd = os.open(files / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
                with os.fdopen(fd, "w") as f:
                    f.write(value)
        os.chmod(files, 0o500)
        out = {k: v for k, v in env.items() if k not in secret}
        out |= {"SLUICE_SECRETS_DIR": str(files), "HOME": str(home)}
        if not self.separate:
            return out, {}
        user = pwd.getpwnam(user_of(service))
        for path in (home, files, *files.iterdir()):
            os.chown(path, user.pw_uid, user.pw_gid)
        return out, self.popen_args(service)

    def popen_args(self, service: str) -> dict[str, Any]:
        """``subprocess.Popen`` arguments that run a process as ``service``'s user: its own
        group and :data:`GROUP`, none of the caller's supplementary groups."""
        if not self.separate:
            return {}
        name = user_of(service)
        return {"user": name, "group": name, "extra_groups": [GROUP]}


def embedded_socket_dir(database_url: str, state: Path) -> Path | None:
    """The directory of the embedded PostgreSQL's socket (``?host=/...`` in its URL) when it
    lies under ``state``; None for a database reached over TCP or kept elsewhere."""
    hosts = parse_qs(urlsplit(database_url).query).get("host", [])
    for host in hosts:
        path = Path(host)
        if path.is_absolute() and path.resolve().is_relative_to(state.resolve()):
            return path
    return None

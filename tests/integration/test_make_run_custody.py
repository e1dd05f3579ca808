"""make run is as safe as the deployments (docs/security.md, "make run's custody"), attacked on
a stack started the way ``make run`` starts it (tools.stack.run: its stores, its broker, its
custody, its services), here as root, as make run runs on this machine.

Before, make run's broker was PLAINTEXT without an authorizer and every service ran as the one
user that owned ``.sluice/``: a compromised gateway could read compliance's signing seed (from
``.sluice/compliance_signing_key`` or compliance's environment) and write a command signed
with it straight to the ledger's topic; one moved 20.00 past an exhausted cap. Now the broker
takes SASL/PLAIN with the ACLs compose and Kubernetes apply, each service connects as its own
principal, and each runs as its own OS user that alone reads its secrets.
"""

from __future__ import annotations

import asyncio
import json
import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
from aiokafka.errors import TopicAuthorizationFailedError
from pydantic import SecretStr
from sqlalchemy.engine import make_url

from common.acls import SERVICES
from common.auth import ALL_SCOPES
from common.authority import SigningKey
from common.broker import create_broker
from common.contracts import Ctx, Decision, encode
from common.contracts.commands import CreateTransfer, Party, ReleaseAllowance
from common.ids import new_id
from common.settings import Settings
from common.topics import Topics
from tests.conftest import Stack, Tenant
from tests.support.db import pg_kwargs
from tests.support.flows import book, created, funded, send, wait_state
from tools.stack import run
from tools.stack.custody import Custody, user_of
from tools.stack.processes import free_port
from tools.stack.stores import Stores
from tools.stack.suite import PORT_SETTING, Suite, migrate

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

D = Decimal
TOPICS = Topics()


@dataclass
class Local:
    state: Path
    stores: Stores
    suite: Suite
    custody: Custody
    secrets: dict[str, str]  # what make run generated and saved under state

    def url(self, service: str) -> str:
        return next(p.url for p in self.suite.procs if p.name == service)

    def pid(self, service: str) -> int:
        return next(p.popen.pid for p in self.suite.procs if p.name == service)

    def secret_file(self, service: str, setting: str) -> Path:
        return self.custody.root / service / "secrets" / setting


@pytest.fixture(scope="module")
def local() -> Iterator[Local]:
    """The stack of ``make run`` (tools.stack.run's own steps), on ports of its own and with its
    state in a directory other users may pass (as a checkout's ``.sluice/`` is)."""
    state = Path(tempfile.mkdtemp(prefix="sluice-run-custody-"))
    state.chmod(0o711)
    environ = {setting: str(free_port()) for setting in PORT_SETTING.values()}
    ports = run.service_ports(environ | {"SLUICE_GATEWAY_METRICS_PORT": str(free_port())})
    secrets = run.local_secrets(state)
    stores, custody = run.start_stores(state)
    suite = Suite(run.suite_env(stores, secrets, ports["gateway"][1]), state / "logs", custody=custody)
    try:
        migrate(suite.env, state / "logs" / "migrate.log")
        run.start_services(suite, ports, ports.pop(run.METRICS)[1])
        suite.wait_ready(timeout=float(os.environ.get("SLUICE_TEST_READY_S", "300")))
        yield Local(state, stores, suite, custody, secrets)
    finally:
        run.stop_quietly(suite.stop, stores.stop)
        shutil.rmtree(state, ignore_errors=True)


def _tenant(local: Local) -> Tenant:
    """A sandbox tenant and key made through admin, as make run makes its own."""
    gateway = next(p for p in local.suite.procs if p.name == "gateway")
    stack = Stack(local.stores, local.suite, local.suite.env, gateways=[gateway])
    name = f"custody-{uuid.uuid4().hex[:8]}"
    tenant = _admin(
        local, "upsert_tenant", tenant_name=name, default_mode="sandbox", rate_limit_per_minute=600
    )
    scopes = list(ALL_SCOPES)
    key = _admin(local, "create_api_key", tenant_id=tenant["tenant_id"], key_label="custody", scopes=scopes)
    return Tenant(tenant["tenant_id"], name, key["api_key"], key["key_id"], stack, scopes)


def _admin(local: Local, action: str, **fields: Any) -> Any:
    token = local.secrets["SLUICE_ADMIN_TOKEN"]  # make run's own: one token, no name
    r = httpx.post(
        local.url("admin") + "/",
        json={"action": action, **fields},
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    assert r.status_code == 200, r.text
    return r.json()["data"]


def _as_gateway_principal(local: Local) -> Settings:
    """The Kafka client settings a compromised gateway holds: the stack's, with its own
    password from its secrets file where the broker asks for one."""
    protocol = local.suite.env.get("SLUICE_KAFKA_SECURITY_PROTOCOL", "PLAINTEXT")
    login: dict[str, Any] = {}
    if protocol != "PLAINTEXT":
        password = local.secret_file("gateway", "SLUICE_KAFKA_SASL_PASSWORD").read_text()
        login = {
            "kafka_sasl_mechanism": "PLAIN",
            "kafka_sasl_username": "gateway",
            "kafka_sasl_password": SecretStr(password),
        }
    return Settings(
        kafka_bootstrap=local.stores.kafka_bootstrap,
        kafka_security_protocol=protocol,
        kafka_request_timeout_ms=10000,
        **login,
    )


async def _publish(settings: Settings, records: dict[str, bytes]) -> dict[str, str]:
    broker = create_broker(settings, "attack-" + uuid.uuid4().hex[:6])
    await broker.start()
    out = {}
    try:
        for topic, record in records.items():
            try:
                await asyncio.wait_for(broker.publish(record, topic=topic), 15)
                out[topic] = "ok"
            except TopicAuthorizationFailedError:
                out[topic] = "TopicAuthorizationFailed"
    finally:
        await broker.stop()
    return out


def _forged_transfer(local: Local, tenant_id: str, src: str, dst: str, amount: str) -> CreateTransfer:
    """A book transfer signed with compliance's real key, as if it had leaked: the worst case,
    so that the broker alone is what stops it."""
    cmd = CreateTransfer(
        command_id=new_id("cmd"),
        ctx=Ctx(request_id=new_id("req"), tenant_id=tenant_id, mode="sandbox", reply_to=None),
        decision=Decision(decision_id=new_id("dec"), outcome="allow", rule="forged"),
        transfer_id=new_id("tr"),
        kind="transfer",
        source=Party(payment_rail="provider_wallet", currency="USDC", amount=amount, provider_wallet_id=src),
        destination=Party(payment_rail="provider_wallet", currency="USDC", provider_wallet_id=dst),
        amount=amount,
        currency="USDC",
        idempotency_key=uuid.uuid4().hex,
    )
    key = SigningKey.parse(local.secrets["SLUICE_COMPLIANCE_SIGNING_KEY"], "compliance", 900)
    return key.sign(cmd)


async def _money_and_caps(local: Local, tenant_id: str, transfer_id: str) -> tuple[D, int]:
    conn = await asyncpg.connect(**pg_kwargs(local.stores.database_url))
    try:
        used = "SELECT coalesce(sum(used), 0) FROM compliance.cap_usage WHERE tenant_id = $1"
        found = "SELECT count(*) FROM ledger.transfers WHERE id = $1"
        return D(await conn.fetchval(used, tenant_id)), int(await conn.fetchval(found, transfer_id))
    finally:
        await conn.close()


def _balance(t: Tenant, wallet: str) -> D:
    return D(t.get(f"/v1/wallets/{wallet}").json()["data"]["available_balance"])


def test_money_moves_end_to_end_and_a_forged_command_is_refused_by_the_broker(local: Local) -> None:
    """(c) one book transfer through every service, each on its own principal, exhausts a
    cap; (a) the gateway's principal producing a compliance-signed 20.00 to the ledger's
    commands, and a release giving the cap back, is refused by the broker, and nothing moves;
    the refusals are in the broker's log for an operator."""
    t = _tenant(local)
    cap = {"tenant_id": t.tenant_id, "mode": "sandbox", "per_transfer": "10", "daily": "10"}
    _admin(local, "set_transfer_cap", **cap)
    a, b = funded(t, "100.00")["wallet_id"], funded(t, "1.00")["wallet_id"]
    done = created(send(t, "/v1/transfers", book(a, b, "10.00")))["transfer_id"]
    wait_state(t, f"/v1/transfers/{done}", "completed")
    over = send(t, "/v1/transfers", book(a, b, "0.01"))
    assert over.status_code == 403 and over.json()["error"]["details"]["reason"] == "transfer_cap_exceeded"

    forged = _forged_transfer(local, t.tenant_id, a, b, "20.00")
    release = ReleaseAllowance(
        command_id=new_id("cmd"),
        ctx=Ctx(request_id=new_id("req"), tenant_id=t.tenant_id, mode="sandbox"),
        transfer_id=done,
    )
    log = local.stores.kafka_nodes[0].log_file
    mark = log.stat().st_size
    records = {
        TOPICS.ledger_commands: encode(forged),
        TOPICS.compliance_releases: encode(release),
    }
    found = asyncio.run(_publish(_as_gateway_principal(local), records))
    assert found == dict.fromkeys(records, "TopicAuthorizationFailed")

    assert (_balance(t, a), _balance(t, b)) == (D("90.00"), D("11.00"))
    assert asyncio.run(_money_and_caps(local, t.tenant_id, forged.transfer_id)) == (D(10), 0)
    with log.open("rb") as f:
        f.seek(mark)
        denied = [
            line
            for line in f.read().decode(errors="replace").splitlines()
            if "User:gateway is Denied" in line
        ]
    for topic in records:  # "... is Denied operation = WRITE ... on resource = Topic:LITERAL:<topic> ..."
        assert [line for line in denied if "WRITE" in line.upper() and f"Topic:LITERAL:{topic} " in line], (
            denied
        )


def test_each_service_runs_as_its_own_user_with_no_secret_in_its_environment(local: Local) -> None:
    """Every service process is its own OS user, and no secret of make run is in any service's
    environment (they are files in its own directory)."""
    secrets = [v for k, v in local.secrets.items() if k != "SLUICE_ENV" and "VERIFY" not in k]
    secrets += list(local.stores.kafka_users.values())
    stores = [*local.stores.role_urls.values(), *local.stores.valkey_urls.values()]
    secrets += [str(make_url(u).password) for u in stores]  # the database's and Valkey's
    for service in SERVICES:
        environ = Path(f"/proc/{local.pid(service)}/environ").read_bytes().decode(errors="replace")
        held = [name for name, value in local.secrets.items() if value in secrets and value in environ]
        assert not [s for s in secrets if s in environ], (service, held)
        assert "SLUICE_SECRETS_DIR=" in environ, service
    for service in SERVICES:
        status = Path(f"/proc/{local.pid(service)}/status").read_text().splitlines()
        uids = next(line for line in status if line.startswith("Uid:")).split()[1:]
        want = str(pwd.getpwnam(user_of(service)).pw_uid)
        assert set(uids) == {want}, (service, uids, local.custody.why_shared)


_READ = """
import json, os, sys
out = {}
for path in sys.argv[1:]:
    try:
        os.listdir(path) if os.path.isdir(path) else open(path).read()
        out[path] = "read"
    except OSError as exc:
        out[path] = type(exc).__name__
print(json.dumps(out))
"""


def test_the_gateways_user_cannot_read_compliances_key(local: Local) -> None:
    """(b) as the gateway's OS user: compliance's signing key (its file, make run's saved copy,
    compliance's environment) and the list of the services' directories are refused with
    PermissionError; its own secret it reads. Without the key no compliance-signed command can
    be made (one signed with any other key is refused by the ledger: test_authority.py)."""
    key = local.secret_file("compliance", "SLUICE_COMPLIANCE_SIGNING_KEY")
    paths = [
        key,
        local.state / "compliance_signing_key",
        Path(f"/proc/{local.pid('compliance')}/environ"),
        local.custody.root,
        local.secret_file("gateway", "SLUICE_GATEWAY_CACHE_KEY"),
    ]
    done = subprocess.run(  # the gateway's user, as tools.stack.suite starts the gateway  # noqa: S603
        [local.custody.python, "-c", _READ, *map(str, paths)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        **local.custody.popen_args("gateway"),
    )
    got = json.loads(done.stdout)
    assert got == {str(p): "PermissionError" for p in paths[:-1]} | {str(paths[-1]): "read"}
    assert key.read_text() == local.secrets["SLUICE_COMPLIANCE_SIGNING_KEY"]  # there, and compliance's

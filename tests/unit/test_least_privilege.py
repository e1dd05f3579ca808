"""Least privilege without a stack (docs/security.md, "Database roles and per-service
secrets"): each service's settings require and keep only its own secrets; compose and deploy/k8s
give each service only its own secrets and its own database role; the database plan grants what
the table says. Any widening (a secret or a grant added in the code or a manifest) fails here
until the table in tests/support/least_privilege.py is changed too;
tests/integration/test_least_privilege.py reads the grants back from PostgreSQL's catalog."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy.engine import make_url

from common import privileges
from common.settings import AUTHORITY_VERIFIERS, SECRET_SETTINGS, SERVICE_SECRETS, load_settings
from common.valkey_acl import VALKEY_USERS
from tests.support.k8s import generator, render
from tests.support.least_privilege import (
    CORE_SECRETS,
    EVERY_SECRET,
    EXCEPTIONS,
    SCHEMA_OF,
    SECRETS_OF,
    SERVICES,
)
from tests.support.secrets_env import production_env, strong_secrets, verify_keys
from tools.stack.stores import ROLE_URL
from tools.stack.suite import scoped_env

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]


def test_each_service_uses_the_secrets_of_the_table() -> None:
    assert {s: set(v) for s, v in SERVICE_SECRETS.items()} == SECRETS_OF
    assert set(SECRET_SETTINGS.values()) == CORE_SECRETS


@pytest.fixture
def production(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    return production_env(monkeypatch)


@pytest.mark.parametrize("service", SERVICES)
def test_a_production_service_starts_with_its_own_secrets_alone(
    service: str, production: pytest.MonkeyPatch
) -> None:
    values = strong_secrets()
    for name in SECRETS_OF[service] & CORE_SECRETS:
        production.setenv(name, values[name])
    if service in AUTHORITY_VERIFIERS:  # public keys, not a secret: given where they verify
        production.setenv("SLUICE_AUTHORITY_VERIFY_KEYS", verify_keys(values))
    settings = load_settings(service)
    for attr, name in SECRET_SETTINGS.items():
        held = getattr(settings, attr).get_secret_value()
        assert held == (values[name] if name in SECRETS_OF[service] else ""), (service, name)


@pytest.mark.parametrize("service", SERVICES)
def test_a_service_given_every_secret_keeps_only_its_own(
    service: str, production: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    values = strong_secrets()
    for name, value in values.items():
        production.setenv(name, value)
    production.setenv("SLUICE_AUTHORITY_VERIFY_KEYS", verify_keys(values))
    # The warning is read on its own logger: an earlier test's logging set-up (a disabled
    # logger, a raised level, logging.disable, propagation) must not hide it (it did, in the
    # full suite only).
    logger = logging.getLogger("common.settings")
    production.setattr(logger, "disabled", False)
    production.setattr(logging.root.manager, "disable", logging.NOTSET)
    logger.addHandler(caplog.handler)
    try:
        with caplog.at_level(logging.WARNING, logger="common.settings"):
            settings = load_settings(service)
    finally:
        logger.removeHandler(caplog.handler)
    for attr, name in SECRET_SETTINGS.items():
        held = getattr(settings, attr).get_secret_value()
        assert held == (values[name] if name in SECRETS_OF[service] else ""), (service, name)
    foreign = sorted(CORE_SECRETS - SECRETS_OF[service])
    logged = " ".join(r.getMessage() for r in caplog.records)
    assert all(name in logged for name in foreign)  # named, so a deployment can be narrowed
    assert not any(v in logged for v in values.values())  # never a value


@pytest.mark.parametrize("service", ["gateway", "admin", "webhooks"])
def test_a_service_without_its_secrets_refuses_naming_its_own_only(
    service: str, production: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.CRITICAL), pytest.raises(SystemExit) as stop:
        load_settings(service)
    assert stop.value.code == 2
    refusal = next(r.getMessage() for r in caplog.records if "refusing" in r.getMessage())
    for name in CORE_SECRETS:
        assert (name in refusal) == (name in SECRETS_OF[service]), (service, name, refusal)


def test_the_stack_gives_each_process_its_secrets_and_role_only() -> None:
    env = {
        **strong_secrets(),
        "SLUICE_DATABASE_URL": "postgresql+asyncpg://postgres@/db",
        "SLUICE_ENV": "development",
    }
    env |= {
        ROLE_URL + who.upper(): f"postgresql+asyncpg://r_{who}:pw@/db" for who in (*SERVICES, "migrations")
    }
    for who in (*SERVICES, "migrations"):
        got = scoped_env(who, env)
        assert set(got) & CORE_SECRETS == SECRETS_OF.get(who, set()) & CORE_SECRETS, who
        assert make_url(got["SLUICE_DATABASE_URL"]).username == f"r_{who}"
        assert not [k for k in got if k.startswith(ROLE_URL)], who


def test_the_grant_plan_is_the_table() -> None:
    """common.privileges grants each role its own schema and, beyond it, only the table's
    exceptions (append-only tables, the identity tables the gateway reads)."""
    assert privileges.SCHEMA_OF == SCHEMA_OF
    names = privileges.role_names("p")
    existing = set(names.values())
    for service in SERVICES:
        schema = SCHEMA_OF[service]
        statements = [s for owner in SERVICES for s in privileges.grant_statements(owner, "p", existing)]
        mine = [s for s in statements if s.endswith(f" {names[service]}")]
        outside = {s for s in mine if f" {schema}." not in s and f"SCHEMA {schema} " not in s}
        expected_outside = {
            f"GRANT SELECT ON {sch}.{table} TO {names[service]}"
            for (sch, table), grants in EXCEPTIONS.get(service, {}).items()
            if sch != schema and grants == {"SELECT"}
        } | {
            f"GRANT USAGE ON SCHEMA {sch} TO {names[service]}"
            for sch, _ in EXCEPTIONS.get(service, {})
            if sch != schema
        }
        assert outside == expected_outside, service
        assert not [s for s in mine if "ALL PRIVILEGES" in s or "CREATE" in s or "TRUNCATE" in s]
    # a role that does not exist is left out: it cannot log in
    assert privileges.grant_statements("gateway", "p", set()) == []


# ---- the manifests ----


def _mounted(doc: dict[str, Any]) -> dict[str, str]:
    """path -> Secret key of every secret file a workload's pod mounts."""
    out = {}
    for volume in doc["spec"]["template"]["spec"].get("volumes", []):
        if volume.get("secret", {}).get("secretName") == "sluice-kafka-tls":
            # the brokers' CA (SLUICE_KAFKA_SSL_CAFILE): public, and nothing else of that Secret
            assert volume["secret"]["items"] == [{"key": "ca.crt", "path": "ca.crt"}], doc["metadata"]
            continue
        if "secret" in volume:
            for item in volume["secret"].get("items", []):
                out[item["path"]] = item["key"]
    return out


@pytest.mark.parametrize("overlay", ["base", "overlays/production"])
def test_k8s_gives_each_pod_its_secrets_and_role_only(overlay: str) -> None:
    gen = generator()
    docs = render(ROOT / "deploy" / "k8s" / overlay)
    config = next(d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "sluice-config")
    assert "SLUICE_DATABASE_URL" not in config["data"]
    assert "SLUICE_REDIS_URL" not in config["data"]  # only the pods that use Valkey, each its own
    assert set(gen.VALKEY_PODS) == set(VALKEY_USERS)
    assert not set(config["data"]) & (CORE_SECRETS | SECRETS_OF["ledger"])
    seen = set()
    for doc in docs:
        if doc["kind"] not in ("Deployment", "Job") or doc["metadata"]["name"] == "sluice-kafka":
            continue
        name = doc["metadata"]["labels"]["app.kubernetes.io/name"]
        mounted = _mounted(doc)
        if name in SERVICES:
            role = name
        elif name == "migrate":
            role = "migrations"
        else:  # another Job (Kafka's ACLs): no application secret, no database
            assert not set(mounted) & (CORE_SECRETS | {"SLUICE_DATABASE_URL"}), name
            continue
        seen.add(name)
        own = SECRETS_OF.get(name, set())
        secret_files = {p for p in mounted if p in EVERY_SECRET}
        assert secret_files == own, name
        assert mounted["SLUICE_DATABASE_URL"] == f"SLUICE_DATABASE_URL_{role.upper()}", name
        valkey = {"SLUICE_REDIS_URL"} if name in VALKEY_USERS else set()
        others = set(mounted) - own - valkey - {"SLUICE_DATABASE_URL", "SLUICE_KAFKA_SASL_PASSWORD"}
        assert others == set(), name
        if valkey:  # its own Valkey user's URL, no other (common.valkey_acl)
            assert mounted["SLUICE_REDIS_URL"] == f"SLUICE_REDIS_URL_{name.upper()}", name
        assert not [
            k
            for k in mounted.values()
            if k.startswith("SLUICE_REDIS_URL_") and k not in (f"SLUICE_REDIS_URL_{name.upper()}",)
        ], name
        assert not [
            k
            for k in mounted.values()
            if k.startswith("SLUICE_DATABASE_URL_") and k != mounted["SLUICE_DATABASE_URL"]
        ]
    assert seen == {*SERVICES, "migrate"}


def test_compose_gives_each_service_its_secrets_and_role_only() -> None:
    services = yaml.safe_load((ROOT / "compose.yaml").read_text())["services"]
    passwords = {f"SLUICE_DATABASE_PASSWORD_{w.upper()}" for w in (*SERVICES, "migrations")}
    for name in (*SERVICES, "migrate"):
        env = services[name]["environment"]
        own = SECRETS_OF.get(name, set())
        assert set(env) & (EVERY_SECRET | passwords) == own, name
        role = "migrations" if name == "migrate" else name
        url = env["SLUICE_DATABASE_URL"]
        assert url.startswith(
            f"postgresql+asyncpg://sluice_{role}:${{SLUICE_DATABASE_PASSWORD_{role.upper()}:?"
        ), name
        assert [p for p in passwords if p in url] == [f"SLUICE_DATABASE_PASSWORD_{role.upper()}"], name
    roles = services["roles"]["environment"]
    assert set(roles) == passwords | {"SLUICE_DATABASE_URL"}  # the superuser's, and nothing else
    assert services["roles"]["command"] == ["roles"]


def test_compose_runs_kafka_with_sasl_and_acls_and_no_shared_superuser() -> None:
    """Compose ran Kafka without ACLs and gave PostgreSQL a built-in superuser
    password. Now the broker takes SASL/PLAIN only and refuses what no ACL allows; each service
    connects as its own principal; the superuser's password is a required variable that only
    postgres and the roles job see."""
    services = yaml.safe_load((ROOT / "compose.yaml").read_text())["services"]
    kafka = services["kafka"]["environment"]
    assert "PLAINTEXT://" not in kafka["KAFKA_LISTENERS"].replace("SASL_PLAINTEXT://", "")
    assert kafka["KAFKA_AUTHORIZER_CLASS_NAME"].endswith("StandardAuthorizer")
    assert str(kafka["KAFKA_ALLOW_EVERYONE_IF_NO_ACL_FOUND"]).lower() == "false"
    assert kafka["KAFKA_SUPER_USERS"] == "User:broker"
    for name in SERVICES:
        env = services[name]["environment"]
        assert env["SLUICE_KAFKA_SECURITY_PROTOCOL"] == "SASL_PLAINTEXT"
        assert env["SLUICE_KAFKA_SASL_USERNAME"] == name
        assert f"SLUICE_KAFKA_PASSWORD_{name.upper()}" in env["SLUICE_KAFKA_SASL_PASSWORD"]
        assert "kafka-setup" in services[name]["depends_on"]
    holders = {
        n for n, svc in services.items() if "SLUICE_POSTGRES_PASSWORD" in str(svc.get("environment", ""))
    }
    assert holders == {"postgres", "roles"}
    assert ":sluice@" not in (ROOT / "compose.yaml").read_text()  # no built-in password


# Written out, not read from the code (as SECRETS_OF): a verifier dropped there fails here.
VERIFIES = {"ledger": ("compliance", "admin"), "compliance": ("admin", "ledger"), "webhooks": ("ledger",)}


@pytest.mark.parametrize(("service", "signer"), [(s, n) for s, signers in VERIFIES.items() for n in signers])
def test_a_verifier_without_a_signers_public_key_refuses_to_start(
    service: str, signer: str, production: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The ledger checks compliance's and admin's signatures, compliance admin's and the
    ledger's, webhooks the ledger's: each refuses to start without the public key of any of
    them, naming the setting (docs/security.md, "Who writes each topic")."""
    values = strong_secrets()
    for name in SECRETS_OF[service] & CORE_SECRETS:
        production.setenv(name, values[name])
    kept = [e for e in verify_keys(values).split(",") if not e.startswith(f"{signer}-")]
    production.setenv("SLUICE_AUTHORITY_VERIFY_KEYS", ",".join(kept))
    with caplog.at_level(logging.CRITICAL, logger="common.settings"), pytest.raises(SystemExit) as stopped:
        load_settings(service)
    assert stopped.value.code == 2
    assert f"{signer}'s" in caplog.text and "SLUICE_AUTHORITY_VERIFY_KEYS" in caplog.text

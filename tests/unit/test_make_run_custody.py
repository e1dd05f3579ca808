"""make run's custody (docs/security.md, "make run's custody"): each service's secrets reach it
as files only it may read, never in its environment; each service connects to the broker as
its own principal. The users themselves are exercised against the real stack:
tests/integration/test_make_run_custody.py."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from common.settings import SERVICE_SECRETS
from tools.stack.custody import Custody, embedded_socket_dir, file_settings, reachable
from tools.stack.stores import KAFKA_PASSWORD
from tools.stack.suite import scoped_env

pytestmark = pytest.mark.unit

SERVICES = tuple(SERVICE_SECRETS)


def _env() -> dict[str, str]:
    env = {name: f"value-of-{name}" for name in file_settings()}
    env |= {KAFKA_PASSWORD + s.upper(): f"kafka-{s}" for s in SERVICES}
    return env | {"SLUICE_ENV": "development", "SLUICE_AUTHORITY_VERIFY_KEYS": "public"}


@pytest.mark.parametrize("service", SERVICES)
def test_each_service_is_its_own_principal(service: str) -> None:
    got = scoped_env(service, _env())
    assert got["SLUICE_KAFKA_SASL_USERNAME"] == service
    assert got["SLUICE_KAFKA_SASL_PASSWORD"] == f"kafka-{service}"
    assert not [k for k in got if k.startswith(KAFKA_PASSWORD)]


def test_migrations_are_no_principal() -> None:
    got = scoped_env("migrations", _env())
    assert "SLUICE_KAFKA_SASL_USERNAME" not in got and "SLUICE_KAFKA_SASL_PASSWORD" not in got


@pytest.mark.parametrize("service", SERVICES)
def test_secrets_are_files_only_the_service_reads(service: str, tmp_path: Path) -> None:
    custody = Custody(tmp_path, separate=False)
    custody.prepare(SERVICES)
    env, popen = custody.hand_over(service, service, scoped_env(service, _env()))
    assert popen == {}  # not separate: this process's user
    assert not set(env) & file_settings(), "a secret left in the environment"
    files = Path(env["SLUICE_SECRETS_DIR"])
    written = {p.name: p.read_text() for p in files.iterdir()}
    assert set(written) == {
        *SERVICE_SECRETS[service],
        "SLUICE_DATABASE_URL",
        "SLUICE_KAFKA_SASL_PASSWORD",
    } | ({"SLUICE_REDIS_URL"} if service in ("gateway", "admin") else set())
    assert written["SLUICE_KAFKA_SASL_PASSWORD"] == f"kafka-{service}"
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o400 for p in files.iterdir())
    assert stat.S_IMODE(files.stat().st_mode) == 0o500
    assert stat.S_IMODE(files.parent.stat().st_mode) == 0o700 == stat.S_IMODE(custody.root.stat().st_mode)
    assert env["HOME"] == str(files.parent)


def test_a_restart_hands_over_a_fresh_set(tmp_path: Path) -> None:
    custody = Custody(tmp_path, separate=False)
    custody.prepare(SERVICES)
    custody.hand_over("ledger", "ledger", scoped_env("ledger", _env()))
    again, _ = custody.hand_over("ledger", "ledger", {"SLUICE_LEDGER_SIGNING_KEY": "rotated"})
    files = Path(again["SLUICE_SECRETS_DIR"])
    assert [p.name for p in files.iterdir()] == ["SLUICE_LEDGER_SIGNING_KEY"]
    assert (files / "SLUICE_LEDGER_SIGNING_KEY").read_text() == "rotated"


def test_separate_users_are_started_as_themselves(tmp_path: Path) -> None:
    args = Custody(tmp_path, separate=True).popen_args("compliance")
    assert args == {"user": "sluice-compliance", "group": "sluice-compliance", "extra_groups": ["sluice"]}


def test_only_the_embedded_databases_socket_is_opened(tmp_path: Path) -> None:
    socket = tmp_path / "pgdata"
    socket.mkdir()
    inside = f"postgresql+asyncpg://postgres:@/sluice?host={socket}"
    assert embedded_socket_dir(inside, tmp_path) == socket
    assert embedded_socket_dir("postgresql+asyncpg://u:p@127.0.0.1:5432/sluice", tmp_path) is None
    assert (
        embedded_socket_dir("postgresql+asyncpg://postgres:@/db?host=/var/run/postgresql", tmp_path) is None
    )


def test_a_directory_behind_a_closed_one_is_unreachable(tmp_path: Path) -> None:
    closed = tmp_path / "closed"
    (closed / "inner").mkdir(parents=True)
    closed.chmod(0o700)
    tmp_path.chmod(0o755)
    assert not reachable(closed / "inner" / "file")
    closed.chmod(0o711)
    assert reachable(closed / "inner" / "file") == reachable(tmp_path / "x")


def test_a_sasl_stack_names_each_services_principal_and_makes_no_topic(tmp_path: Path) -> None:
    """What the stores hand the services when the embedded broker takes SASL: the protocol,
    the mechanism, one password per service principal (never the broker's), and topics left
    to the broker's principal."""
    from tools.stack.kafka import BROKER_USER
    from tools.stack.stores import Stores

    stores = Stores(tmp_path, kafka_bootstrap="127.0.0.1:1")
    stores.kafka_users = {BROKER_USER: "b", **{s: f"p-{s}" for s in SERVICES}}
    env = stores.service_env()
    assert env["SLUICE_KAFKA_SECURITY_PROTOCOL"] == "SASL_PLAINTEXT"
    assert env["SLUICE_KAFKA_SASL_MECHANISM"] == "PLAIN"
    assert env["SLUICE_KAFKA_CREATE_TOPICS"] == "false"
    assert {k: v for k, v in env.items() if k.startswith(KAFKA_PASSWORD)} == {
        KAFKA_PASSWORD + s.upper(): f"p-{s}" for s in SERVICES
    }
    assert "b" not in env.values()
    plain = Stores(tmp_path, kafka_bootstrap="127.0.0.1:1").service_env()
    assert not [k for k in plain if "SASL" in k or k.startswith(KAFKA_PASSWORD)]

"""common.valkey_acl and tools.stack.suite's scoped_env: Valkey users per service (docs/security.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from common.valkey_acl import VALKEY_USERS, acl_file, password_hash, url_for, user_rule
from tests.support.least_privilege import SERVICES
from tools.stack.stores import REDIS_URL
from tools.stack.suite import scoped_env

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]

# Written out here, not imported: a service or a command added to the code fails this test
# until it is added here too, in the same review.
EXPECTED = {
    "gateway": {
        "keys": {
            "sluice:apikey:*",
            "sluice:tenant:*",
            "sluice:jti:*",
            "sluice:idem:*",
            "sluice:rl:*",
            "sluice:authfail:gateway:*",
        },
        "writes": {"set", "del", "incr", "incrby", "decr", "decrby", "expire"},
    },
    "admin": {
        "keys": {"sluice:apikey:*", "sluice:tenant:*", "sluice:jti:*", "sluice:authfail:admin:*"},
        "writes": {"del", "incr", "incrby", "expire"},
    },
}
READS = {"ping", "client|setinfo", "get", "mget", "multi", "exec", "evalsha", "script|load"}


def test_only_the_gateway_and_admin_use_valkey_with_the_table_s_keys_and_commands() -> None:
    assert set(VALKEY_USERS) == set(EXPECTED)
    for who, spec in VALKEY_USERS.items():
        assert set(spec.keys) == EXPECTED[who]["keys"], who
        assert set(spec.commands) - READS == EXPECTED[who]["writes"], who
        assert "set" not in VALKEY_USERS["admin"].commands


def test_the_acl_file_holds_hashes_and_the_default_user_needs_a_password() -> None:
    passwords = {"gateway": "gw-password-1", "admin": "adm-password-2"}
    text = acl_file("default-password-0", passwords)
    for clear in ("default-password-0", *passwords.values()):
        assert clear not in text
    lines = text.splitlines()
    assert lines[0].startswith("user default on #") and "nopass" not in text
    gateway = next(line for line in lines if line.startswith("user gateway "))
    assert " -@all " in gateway and "~sluice:idem:*" in gateway and "~*" not in gateway.split()
    assert user_rule("admin", "x")[:3] == [
        "reset",
        "on",
        "#" + password_hash("x"),
    ]


def test_each_process_gets_its_own_valkey_url_or_none() -> None:
    env = {
        "SLUICE_REDIS_URL": "redis://default:pw@127.0.0.1:1/0",
        **{REDIS_URL + who.upper(): url_for("redis://127.0.0.1:1/0", who, "p") for who in VALKEY_USERS},
    }
    for who in (*SERVICES, "migrations"):
        got = scoped_env(who, env)
        assert not [k for k in got if k.startswith(REDIS_URL)], who
        if who in VALKEY_USERS:
            assert got["SLUICE_REDIS_URL"] == f"redis://{who}:p@127.0.0.1:1/0"
        else:
            assert "SLUICE_REDIS_URL" not in got, who


def test_compose_s_valkey_users_are_the_table_and_only_gateway_and_admin_get_a_url() -> None:
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    script = compose["services"]["redis"]["command"][2]
    assert '"user default on #$$(h "$$SLUICE_REDIS_PASSWORD_DEFAULT") ~* &* +@all"' in script
    for who in VALKEY_USERS:
        rest = " ".join(user_rule(who, "x")[3:])
        assert f'"user {who} on #$$(h "$$SLUICE_REDIS_PASSWORD_{who.upper()}") {rest}"' in script, who
    assert "SLUICE_REDIS_URL" not in compose["x-service"]["environment"]
    for name, service in compose["services"].items():
        url = (service.get("environment") or {}).get("SLUICE_REDIS_URL")
        if name in VALKEY_USERS:
            password = f"SLUICE_REDIS_PASSWORD_{name.upper()}"
            assert url == f"redis://{name}:${{{password}:?set {password}}}@redis:6379/0"
        else:
            assert url is None, name


def test_the_valkey_acl_command_prints_hashes_only(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from sluice.__main__ import main

    passwords = {who: f"{who}-password-{who}-0123456789" for who in ("default", *VALKEY_USERS)}
    for who, pw in passwords.items():
        monkeypatch.setenv(f"SLUICE_REDIS_PASSWORD_{who.upper()}", pw)
    assert main(["valkey-acl"]) == 0
    out = capsys.readouterr().out
    assert out == acl_file(passwords.pop("default"), passwords)
    assert not [pw for pw in passwords.values() if pw in out]
    monkeypatch.delenv("SLUICE_REDIS_PASSWORD_ADMIN")
    assert main(["valkey-acl"]) == 2

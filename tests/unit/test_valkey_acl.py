"""common.valkey_acl and devstack's scoped_env: Valkey users per service (contract 15.1)."""

from __future__ import annotations

import pytest

from common.valkey_acl import VALKEY_USERS, acl_file, password_hash, url_for, user_rule
from devstack.suite import REDIS_URL, scoped_env
from tests.support.least_privilege import SERVICES

pytestmark = pytest.mark.unit

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

"""Valkey is no root of trust, the store half (docs/security.md, "Valkey is a cache, never a
root of trust").

Before: the test stack's (and make run's) Valkey took commands from anyone who could reach its
port, with no password, and every service was handed its URL, so any service could write a
key record. Now the default user needs the run's password, the gateway and admin each connect
as their own ACL user with only the key patterns and commands they use (common.valkey_acl),
and ledger, compliance, webhooks (and migrations) get no Valkey URL at all.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import msgspec
import pytest
from redis import Redis
from redis.exceptions import AuthenticationError, NoPermissionError, ResponseError

from common.auth import ALL_SCOPES, hash_api_key, key_cache_name
from tests.conftest import Stack, make_tenant
from tools.stack.suite import scoped_env

pytestmark = pytest.mark.integration


def _environ(pid: int) -> dict[str, str]:
    raw = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")  # noqa: SIM115, PTH123
    return dict(e.decode(errors="replace").split("=", 1) for e in raw if b"=" in e)


def test_valkey_refuses_a_client_without_credentials(stack: Stack) -> None:
    url = urlsplit(stack.stores.redis_url)
    anonymous = Redis(host=url.hostname or "127.0.0.1", port=url.port or 6379)
    invented = key_cache_name(hash_api_key("sk_test_invented"))
    with pytest.raises((AuthenticationError, ResponseError)):  # NOAUTH
        anonymous.set(invented, b"{}")
    with pytest.raises((AuthenticationError, ResponseError)):
        anonymous.get(invented)
    wrong = Redis(
        host=url.hostname or "127.0.0.1", port=url.port or 6379, username="gateway", password="guess"
    )
    with pytest.raises((AuthenticationError, ResponseError)):
        wrong.ping()


def test_only_the_gateway_and_admin_get_a_valkey_url_each_their_own(stack: Stack) -> None:
    running = {p.name: p for p in stack.suite.procs if p.popen.poll() is None}
    urls = {}
    for name in ("gateway", "admin", "ledger", "compliance", "webhooks"):
        env = _environ(running[name].popen.pid)
        if name in ("gateway", "admin"):
            user = urlsplit(env["SLUICE_REDIS_URL"]).username
            assert user == name, name
            urls[name] = env["SLUICE_REDIS_URL"]
        else:
            assert "SLUICE_REDIS_URL" not in env, name
        assert not [k for k in env if k.startswith("SLUICE_REDIS_URL_FOR_")], name
    assert urls["gateway"] != urls["admin"]
    assert "SLUICE_REDIS_URL" not in scoped_env("migrations", stack.env)
    assert stack.stores.redis_url not in urls.values()  # the default user's is the tests' alone
    assert set(stack.stores.valkey_urls) == {"gateway", "admin"}


def test_each_service_user_holds_only_what_it_uses(stack: Stack) -> None:
    t = make_tenant(stack)
    assert t.get("/v1/customers").status_code == 200  # the gateway works as its own user
    gateway = Redis.from_url(stack.stores.valkey_urls["gateway"])
    admin = Redis.from_url(stack.stores.valkey_urls["admin"])
    name = key_cache_name(hash_api_key("sk_test_" + "x" * 43))
    record = msgspec.json.encode(
        {
            "key_id": "k",
            "tenant_id": t.tenant_id,
            "mode": "sandbox",
            "scopes": list(ALL_SCOPES),
            "revoked": False,
        }
    )
    # admin evicts (INCR the generation, DEL the entry) but cannot write an entry, signed or not
    with pytest.raises(NoPermissionError):
        admin.set(name, record)
    with pytest.raises(NoPermissionError):
        admin.execute_command("EVAL", "return redis.call('SET', KEYS[1], ARGV[1])", 1, name, record)
    admin.incr(name + ":gen")
    admin.delete(name)
    # the gateway: its own key families only, and no administration of the store
    gateway.set(name, b"-", ex=5)
    for refused in (
        lambda r: r.set("sluice:other", b"1"),
        lambda r: r.get("sluice:idem:x") if r is admin else r.get("sluice:authfail:admin:x"),
        lambda r: r.flushall(),
        lambda r: r.keys("*"),
        lambda r: r.config_get("*"),
        lambda r: r.execute_command("ACL", "LIST"),
        lambda r: r.execute_command("EVAL", "return 1", 0),
        lambda r: r.publish("sluice", b"x"),
    ):
        with pytest.raises(NoPermissionError):
            refused(gateway)
        with pytest.raises(NoPermissionError):
            refused(admin)

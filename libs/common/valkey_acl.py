"""Valkey ACL users: each service that uses Valkey connects as its own user, with only the key
patterns and commands it uses (docs/security.md,
"Round 5: Valkey is a cache, never a root of trust"). A service that does not use Valkey
(ledger, compliance, webhooks, migrations) is given no Valkey URL at all.

- gateway: the caches it fills and verifies (``common.cache_mac``), the idempotency records,
  its rate-limit windows and its failed-login counters; GET/SET/DEL and counters, its Lua
  scripts (``EVALSHA``, loaded with ``SCRIPT LOAD``; every command a script runs is checked
  against the same rules), and the eviction transaction it runs for control events.
- admin: evictions only (INCR the generation, DEL the entry, in MULTI/EXEC) on the three cache
  families, and its own failed-login counters. It cannot SET a cache entry: even an unsigned
  one it could not write.

The default user is refused unless it has a password (tools/stack generates one per run; it is
what tests and operators' tools use). Passwords are stored only as SHA-256 (``#<hex>``) in the
ACL file or ``ACL SETUSER``; the clear password is only in the URL handed to the one service.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from urllib.parse import quote, urlsplit, urlunsplit

from common.auth import key_cache_name, tenant_cache_name, token_cache_name


@dataclass(frozen=True, slots=True)
class ValkeyUser:
    keys: tuple[str, ...]  # glob patterns
    commands: tuple[str, ...]  # lower case; ``script|load`` for a subcommand


_CACHES = (key_cache_name("*"), tenant_cache_name("*"), token_cache_name("*"))
_CONNECT = ("ping", "client|setinfo")  # readiness; redis-py's client name on connect

#: The only services given a Valkey URL, and what each may touch.
VALKEY_USERS: dict[str, ValkeyUser] = {
    "gateway": ValkeyUser(
        keys=(*_CACHES, "sluice:idem:*", "sluice:rl:*", "sluice:authfail:gateway:*"),
        commands=(
            *_CONNECT,
            "get",
            "mget",
            "set",
            "del",
            "incr",  # in scripts; redis-py's incr() and decr() send INCRBY and DECRBY
            "incrby",
            "decr",
            "decrby",
            "expire",
            "multi",
            "exec",
            "evalsha",
            "script|load",
        ),
    ),
    "admin": ValkeyUser(
        keys=(*_CACHES, "sluice:authfail:admin:*"),
        commands=(
            *_CONNECT,
            "get",
            "incr",
            "incrby",
            "expire",
            "del",
            "multi",
            "exec",
            "evalsha",
            "script|load",
        ),
    ),
}


def password_hash(password: str) -> str:
    return hashlib.sha256(password.encode()).hexdigest()


def user_rule(service: str, password: str) -> list[str]:
    """``ACL SETUSER <service>`` arguments (also an ACL file line after ``user``)."""
    spec = VALKEY_USERS[service]
    return [
        "reset",
        "on",
        "#" + password_hash(password),
        "resetchannels",
        *("~" + k for k in spec.keys),
        "-@all",
        *("+" + c for c in spec.commands),
    ]


def acl_file(default_password: str, passwords: dict[str, str]) -> str:
    """An ACL file: the default user behind a password (every command, every key, for tests and
    operators' tools) and one user per service of :data:`VALKEY_USERS`."""
    lines = [f"user default on #{password_hash(default_password)} ~* &* +@all"]
    for service in VALKEY_USERS:
        rule = user_rule(service, passwords[service])
        lines.append(" ".join(["user", service, *rule[1:]]))  # ``reset`` is implied in a file
    return "\n".join(lines) + "\n"


def url_for(base_url: str, user: str, password: str) -> str:
    """``base_url`` (``redis://host:port/db``) with ``user`` and ``password`` in it."""
    parts = urlsplit(base_url)
    host = parts.hostname or "127.0.0.1"
    netloc = f"{quote(user, safe='')}:{quote(password, safe='')}@{host}"
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))

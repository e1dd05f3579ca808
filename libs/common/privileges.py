"""Least privilege in PostgreSQL (docs/security.md, "Database roles and per-service secrets"):
one login role per service, owning nothing.

Every schema, table, sequence and function belongs to the migrations role
(``<prefix>_migrations``): it alone runs DDL and no service runs as it. A service logs in as
``<prefix>_<service>`` and gets:

- its own schema's rows (select, insert, update, delete) and sequences (usage, select);
- on the append-only tables (the journal's entries and postings, admin's audit log) select and
  insert only: append-only by privilege as well as by trigger;
- select on ``alembic_version``, nothing more;
- the gateway, select on the three identity tables it authenticates from (``READS``);
  compliance and webhooks, select on ``identity.tenants`` (a disabled tenant is read from
  admin's record).

Owning nothing, a service role cannot ALTER, DROP or TRUNCATE a table, nor disable its
triggers. Two steps, two holders:

1. :func:`bootstrap` (``python -m sluice roles``; tools.stack.stores for ``make run`` and the
   tests) is run once by a superuser or a CREATEROLE role: the roles, CONNECT on the database
   for them and CREATE (schemas) for the migrations role, and the hand-over to the migrations
   role of what an earlier, single-role install made.
2. :func:`grant` is the last step of ``python -m sluice migrate``, run as the migrations role:
   it grants on what it owns, schema by schema, including default privileges for the tables
   and sequences later migrations create.

tests/integration/test_least_privilege.py reads the grants back from PostgreSQL's catalog.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping, Sequence
from typing import Any

SCHEMA_OF = {
    "admin": "identity",
    "compliance": "compliance",
    "gateway": "gateway",
    "ledger": "ledger",
    "webhooks": "webhooks",
}
# Tables of another service's schema a service reads (select only): the gateway authenticates
# every request from admin's identity tables (common.identity).
READS: dict[str, dict[str, tuple[str, ...]]] = {
    "gateway": {"identity": ("tenants", "api_keys", "access_tokens")},
    # disable_tenant holds in every service, read from where admin writes it: compliance refuses
    # the tenant's new commands, webhooks holds its deliveries
    "compliance": {"identity": ("tenants",)},
    "webhooks": {"identity": ("tenants",)},
}
APPEND_ONLY: dict[str, tuple[str, ...]] = {
    "ledger": ("journal_entries", "postings"),
    "identity": ("audit_log",),
}
MIGRATIONS = "migrations"
DEFAULT_PREFIX = "sluice"
ROLE_PREFIX_SETTING = "SLUICE_DATABASE_ROLE_PREFIX"
_IDENT = re.compile(r"[a-z_][a-z0-9_]*")
_PASSWORD = re.compile(r"[A-Za-z0-9_\-.~]{16,}")


def role_name(prefix: str, who: str) -> str:
    """``<prefix>_<who>``: ``who`` is a service or ``migrations``."""
    name = f"{prefix}_{who}"
    if not _IDENT.fullmatch(name) or len(name) > 63:
        raise ValueError(f"{ROLE_PREFIX_SETTING}={prefix!r} does not make a PostgreSQL role name")
    return name


def role_names(prefix: str) -> dict[str, str]:
    """Every role of a database: each service's and the migrations role's."""
    return {who: role_name(prefix, who) for who in (*SCHEMA_OF, MIGRATIONS)}


def grant_statements(service: str, prefix: str, existing: set[str]) -> list[str]:
    """The grants on ``service``'s schema, to the roles of ``existing`` (others are skipped:
    a role that does not exist cannot log in)."""
    schema = SCHEMA_OF[service]
    own = role_name(prefix, service)
    out: list[str] = []
    if own in existing:
        dml = "SELECT, INSERT, UPDATE, DELETE"
        out += [
            f"GRANT USAGE ON SCHEMA {schema} TO {own}",
            f"GRANT {dml} ON ALL TABLES IN SCHEMA {schema} TO {own}",
            f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA {schema} TO {own}",
            f"ALTER DEFAULT PRIVILEGES IN SCHEMA {schema} GRANT {dml} ON TABLES TO {own}",
            f"ALTER DEFAULT PRIVILEGES IN SCHEMA {schema} GRANT USAGE, SELECT ON SEQUENCES TO {own}",
            f"REVOKE INSERT, UPDATE, DELETE ON {schema}.alembic_version FROM {own}",
        ]
        out += [f"REVOKE UPDATE, DELETE ON {schema}.{t} FROM {own}" for t in APPEND_ONLY.get(schema, ())]
    for reader, schemas in READS.items():
        tables = schemas.get(schema, ())
        who = role_name(prefix, reader)
        if tables and who in existing:
            out.append(f"GRANT USAGE ON SCHEMA {schema} TO {who}")
            out += [f"GRANT SELECT ON {schema}.{t} TO {who}" for t in tables]
    return out


def _engine(url: str) -> Any:
    from sqlalchemy.ext.asyncio import create_async_engine

    return create_async_engine(url, pool_size=1, max_overflow=0)


async def _existing_roles(conn: Any, names: Sequence[str]) -> set[str]:
    from sqlalchemy import text

    rows = await conn.execute(
        text("SELECT rolname FROM pg_roles WHERE rolname = ANY(:n)"), {"n": list(names)}
    )
    return {r[0] for r in rows}


def grant(service: str, url: str, prefix: str = DEFAULT_PREFIX) -> list[str]:
    """Grant on ``service``'s schema (after its migrations, as the role that owns it); the
    roles that do not exist, by name (blocking)."""
    from sqlalchemy import text

    async def run() -> list[str]:
        engine = _engine(url)
        try:
            async with engine.begin() as conn:
                schema = SCHEMA_OF[service]
                readers = [role_name(prefix, r) for r, reads in READS.items() if reads.get(schema)]
                wanted = [role_name(prefix, service), *readers]
                existing = await _existing_roles(conn, wanted)
                for statement in grant_statements(service, prefix, existing):
                    await conn.execute(text(statement))
                return [w for w in wanted if w not in existing]
        finally:
            await engine.dispose()

    return asyncio.run(run())


def bootstrap(url: str, database: str, prefix: str, passwords: Mapping[str, str]) -> None:
    """Create (or re-password) every role of ``database`` and give the migrations role what
    earlier installs made there; ``url`` connects as a superuser or CREATEROLE role to that
    database, ``passwords`` has one per ``role_names(prefix)`` key (blocking)."""
    from sqlalchemy import text

    roles = role_names(prefix)
    if not _IDENT.fullmatch(database):
        raise ValueError(f"database name {database!r}: expected lower-case letters, digits and _")
    for who, pw in passwords.items():
        if not _PASSWORD.fullmatch(pw):
            raise ValueError(f"the password of {roles[who]}: at least 16 of A-Z a-z 0-9 _ - . ~")
    attributes = "LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION NOBYPASSRLS"

    async def run() -> None:
        engine = _engine(url)
        try:
            async with engine.begin() as conn:
                existing = await _existing_roles(conn, list(roles.values()))
                for who, name in roles.items():
                    verb = "ALTER" if name in existing else "CREATE"
                    await conn.execute(text(f"{verb} ROLE {name} {attributes} PASSWORD '{passwords[who]}'"))
                migrator = roles[MIGRATIONS]
                await conn.execute(text(f'REVOKE ALL ON DATABASE "{database}" FROM PUBLIC'))
                await conn.execute(
                    text(f'GRANT CONNECT ON DATABASE "{database}" TO {", ".join(roles.values())}')
                )
                await conn.execute(text(f'GRANT CREATE ON DATABASE "{database}" TO {migrator}'))
                await conn.execute(text("REVOKE CREATE ON SCHEMA public FROM PUBLIC"))
                for statement in await _handover(conn, migrator):
                    await conn.execute(text(statement))
        finally:
            await engine.dispose()

    asyncio.run(run())


async def _handover(conn: Any, migrator: str) -> list[str]:
    """``ALTER ... OWNER TO`` the migrations role for everything in the services' schemas it
    does not own yet (an install from before the roles, where one role owned everything)."""
    from sqlalchemy import text

    schemas = list(SCHEMA_OF.values())
    q = text(
        """SELECT 'ALTER SCHEMA ' || quote_ident(n.nspname) || ' OWNER TO ' || :m
             FROM pg_namespace n WHERE n.nspname = ANY(:s) AND pg_get_userbyid(n.nspowner) <> :m
           UNION ALL
           SELECT 'ALTER ' || CASE c.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW'
                                   WHEN 'S' THEN 'SEQUENCE' ELSE 'TABLE' END
                  || ' ' || quote_ident(n.nspname) || '.' || quote_ident(c.relname) || ' OWNER TO ' || :m
             FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = ANY(:s) AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')
              AND pg_get_userbyid(c.relowner) <> :m
              AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass
                              AND d.objid = c.oid AND d.deptype IN ('a', 'i'))
           UNION ALL
           SELECT 'ALTER ROUTINE ' || p.oid::regprocedure::text || ' OWNER TO ' || :m
             FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
            WHERE n.nspname = ANY(:s) AND pg_get_userbyid(p.proowner) <> :m"""
    )
    return [r[0] for r in await conn.execute(q, {"m": migrator, "s": schemas})]

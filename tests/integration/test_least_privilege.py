"""Least privilege on the running stack (docs/security.md, "Database roles and per-service
secrets"): each service process is given only its own secrets and its own database role; each
role's grants, read back from PostgreSQL's catalog, are exactly the table below; every object
belongs to the migrations role, so a service role cannot alter, drop or un-trigger a table (the
journal's append-only triggers above all), while the migrations role can.

The expected tables are written out in tests/support/least_privilege.py, not imported from the
code: a grant or a secret added there fails these tests until the table is changed too;
tests/unit/test_least_privilege.py checks the same tables against the settings and manifests.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import asyncpg
import pytest
from sqlalchemy.engine import make_url

from tests.conftest import Stack, customer_body, make_tenant
from tests.support.db import pg_kwargs, run_async
from tests.support.least_privilege import (
    CORE_SECRETS,
    EVERY_SECRET,
    SCHEMA_OF,
    SECRETS_OF,
    SERVICES,
    expected_schemas,
    expected_table_grants,
)

pytestmark = pytest.mark.integration

TABLE_PRIVILEGES = ("SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER")


def roles(stack: Stack) -> dict[str, str]:
    prefix = stack.env.get("SLUICE_DATABASE_ROLE_PREFIX", "(no roles)")
    return {who: f"{prefix}_{who}" for who in (*SERVICES, "migrations")}


def catalog(stack: Stack, sql: str, *args: Any) -> list[asyncpg.Record]:
    async def run() -> list[asyncpg.Record]:
        conn = await asyncpg.connect(**pg_kwargs(stack.stores.database_url))
        try:
            return list(await conn.fetch(sql, *args))
        finally:
            await conn.close()

    return list(run_async(run()))


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode(errors="replace").partition("=")[::2] for item in raw if item)


def service_url(stack: Stack, name: str) -> str:
    """The database URL a running ``name`` process was given (what it connects with)."""
    proc = next(p for p in stack.suite.procs if p.name == name)
    return _environ(proc.popen.pid)["SLUICE_DATABASE_URL"]


def test_each_service_process_is_given_its_own_secrets_and_role_only(stack: Stack) -> None:
    names = roles(stack)
    seen = set()
    for proc in stack.suite.procs:
        if proc.popen.poll() is not None:
            continue  # stopped by an earlier test of the session (its replacement is listed too)
        env = _environ(proc.popen.pid)
        given = EVERY_SECRET & set(env)
        assert given <= SECRETS_OF[proc.name], (proc.name, sorted(given - SECRETS_OF[proc.name]))
        assert SECRETS_OF[proc.name] & CORE_SECRETS <= given, proc.name  # the stack sets these four
        assert make_url(env["SLUICE_DATABASE_URL"]).username == names[proc.name], proc.name
        assert not [k for k in env if k.startswith("SLUICE_DATABASE_URL_")], proc.name  # no other role's
        seen.add(proc.name)
    assert seen >= set(SERVICES)


def test_the_services_connect_as_their_roles(stack: Stack) -> None:
    tenant = make_tenant(stack)
    assert tenant.post("/v1/customers", customer_body()).status_code == 201
    names = roles(stack)
    connected = {
        r["usename"]
        for r in catalog(
            stack,
            """SELECT usename FROM pg_stat_activity
                WHERE datname = current_database() AND pid <> pg_backend_pid()""",
        )
    }
    superuser = make_url(stack.stores.database_url).username or "postgres"
    assert connected - {superuser} <= set(names.values()), connected
    assert {names["gateway"], names["admin"], names["ledger"]} <= connected, connected


def test_every_role_has_exactly_the_grants_of_the_table(stack: Stack) -> None:
    names = roles(stack)
    by_role = {names[s]: s for s in SERVICES}
    schemas = sorted(set(SCHEMA_OF.values()))
    relations = """FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = ANY($1) AND c.relkind::text = ANY($2::text[])"""
    tables = catalog(stack, f"SELECT n.nspname, c.relname {relations}", schemas, list("rpvmf"))
    sequences = catalog(stack, f"SELECT n.nspname, c.relname {relations}", schemas, ["S"])
    assert len(tables) > 20 and sequences
    granted = """SELECT n.nspname, c.relname, r.rolname, p.priv
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        CROSS JOIN pg_roles r CROSS JOIN unnest($4::text[]) AS p(priv)
        WHERE n.nspname = ANY($1) AND c.relkind::text = ANY($2::text[]) AND r.rolname = ANY($3)
          AND has_{kind}_privilege(r.oid, c.oid, p.priv)"""
    got: dict[tuple[str, str, str], set[str]] = {}
    for row in catalog(
        stack, granted.format(kind="table"), schemas, list("rpvmf"), list(by_role), TABLE_PRIVILEGES
    ):
        got.setdefault((by_role[row["rolname"]], row["nspname"], row["relname"]), set()).add(row["priv"])
    for row in catalog(
        stack, granted.format(kind="sequence"), schemas, ["S"], list(by_role), ["USAGE", "SELECT", "UPDATE"]
    ):
        got.setdefault((by_role[row["rolname"]], row["nspname"], row["relname"]), set()).add(row["priv"])
    want: dict[tuple[str, str, str], set[str]] = {}
    for service in SERVICES:
        for t in tables:
            privileges = expected_table_grants(service, t["nspname"], t["relname"])
            if privileges:
                want[(service, t["nspname"], t["relname"])] = privileges
        for q in sequences:
            if q["nspname"] == SCHEMA_OF[service]:
                want[(service, q["nspname"], q["relname"])] = {"USAGE", "SELECT"}
    wrong = {
        k: (sorted(got.get(k, ())), sorted(want.get(k, ())))
        for k in got.keys() | want.keys()
        if got.get(k) != want.get(k)
    }
    assert wrong == {}  # (service, schema, relation): (granted, expected)

    places = catalog(
        stack,
        """SELECT r.rolname, s.name, has_schema_privilege(r.oid, s.name, 'USAGE') AS usage,
                  has_schema_privilege(r.oid, s.name, 'CREATE') AS create
             FROM pg_roles r CROSS JOIN unnest($2::text[]) AS s(name) WHERE r.rolname = ANY($1)""",
        list(by_role),
        [*schemas, "public"],
    )
    for row in places:
        service = by_role[row["rolname"]]
        assert not row["create"], dict(row)
        assert row["usage"] == (row["name"] in expected_schemas(service) | {"public"}), dict(row)
    database = catalog(
        stack,
        """SELECT rolname FROM pg_roles WHERE rolname = ANY($1)
              AND (has_database_privilege(oid, current_database(), 'CREATE')
                   OR has_database_privilege(oid, current_database(), 'TEMP')
                   OR NOT has_database_privilege(oid, current_database(), 'CONNECT'))""",
        list(by_role),
    )
    assert database == []


def test_the_migrations_role_owns_everything_and_no_service_role_anything(stack: Stack) -> None:
    names = roles(stack)
    schemas = sorted(set(SCHEMA_OF.values()))
    owners = catalog(
        stack,
        """SELECT 'schema ' || nspname AS what, pg_get_userbyid(nspowner) AS owner FROM pg_namespace
            WHERE nspname = ANY($1)
           UNION ALL
           SELECT 'relation ' || n.nspname || '.' || c.relname, pg_get_userbyid(c.relowner)
             FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = ANY($1)
           UNION ALL
           SELECT 'function ' || p.oid::regprocedure::text, pg_get_userbyid(p.proowner)
             FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = ANY($1)""",
        schemas,
    )
    assert len(owners) > 30
    assert [(r["what"], r["owner"]) for r in owners if r["owner"] != names["migrations"]] == []
    service_roles = [names[s] for s in SERVICES]
    owned = catalog(
        stack,
        """SELECT c.relname FROM pg_class c WHERE pg_get_userbyid(c.relowner) = ANY($1)
           UNION ALL SELECT p.proname FROM pg_proc p WHERE pg_get_userbyid(p.proowner) = ANY($1)
           UNION ALL SELECT nspname FROM pg_namespace WHERE pg_get_userbyid(nspowner) = ANY($1)""",
        service_roles,
    )
    assert owned == []
    attributes = catalog(
        stack,
        """SELECT rolname, rolsuper, rolcreaterole, rolcreatedb, rolbypassrls, rolreplication, rolinherit
             FROM pg_roles WHERE rolname = ANY($1)""",
        list(names.values()),
    )
    assert len(attributes) == len(names)
    assert [dict(r) for r in attributes if any(v is True for k, v in dict(r).items() if k != "rolname")] == []
    members = catalog(
        stack,
        """SELECT pg_get_userbyid(roleid) AS granted, pg_get_userbyid(member) AS member FROM pg_auth_members
            WHERE pg_get_userbyid(member) = ANY($1) OR pg_get_userbyid(roleid) = ANY($1)""",
        list(names.values()),
    )
    assert [dict(r) for r in members] == []  # no role is another's member


DENIED = [
    "ALTER TABLE ledger.journal_entries DISABLE TRIGGER journal_entries_append_only",
    "ALTER TABLE ledger.postings DISABLE TRIGGER postings_append_only",
    "ALTER TABLE ledger.journal_entries DISABLE TRIGGER USER",
    "DROP TRIGGER journal_entries_append_only ON ledger.journal_entries",
    "ALTER TABLE ledger.journal_entries DISABLE TRIGGER ALL",  # system triggers too: superuser only
    "DROP TABLE ledger.journal_chains",
    "TRUNCATE ledger.postings",
    "ALTER TABLE ledger.transfers ADD COLUMN x INT",
    "UPDATE ledger.journal_entries SET hash = hash",
    "DELETE FROM ledger.postings",
    "CREATE TABLE ledger.shadow (id INT)",
    "CREATE TABLE public.shadow (id INT)",
    "CREATE SCHEMA shadow",
    "SET session_replication_role = replica",
]


async def _try(url: str, statements: list[str]) -> dict[str, str]:
    """Each statement in its own transaction, rolled back: what PostgreSQL answered."""
    conn = await asyncpg.connect(**pg_kwargs(url))
    out = {}
    try:
        for sql in statements:
            tx = conn.transaction()
            await tx.start()
            try:
                await conn.execute(sql)
                out[sql] = "ok"
            except asyncpg.PostgresError as exc:
                out[sql] = type(exc).__name__
            finally:
                await tx.rollback()
    finally:
        await conn.close()
    return out


def test_a_service_role_cannot_disable_the_journal_triggers(stack: Stack) -> None:
    """Run as a service role, every way to switch off or go around the
    journal's append-only triggers is refused; run as the migrations role (the positive
    control, rolled back), the same statements that need ownership are allowed."""
    answered = run_async(_try(service_url(stack, "ledger"), DENIED))
    assert {sql: a for sql, a in answered.items() if a not in ("InsufficientPrivilegeError",)} == {}
    owner = run_async(_try(stack.stores.role_urls["migrations"], DENIED[:4]))
    assert owner == dict.fromkeys(DENIED[:4], "ok")
    for other in ("gateway", "webhooks", "compliance", "admin"):
        statements = ["SELECT 1 FROM ledger.journal_entries LIMIT 1", *DENIED[:3]]
        refused = run_async(_try(service_url(stack, other), statements))
        assert set(refused.values()) == {"InsufficientPrivilegeError"}, (other, refused)


def test_the_gateway_reads_identity_and_cannot_write_it(stack: Stack) -> None:
    make_tenant(stack)
    answered = run_async(
        _try(
            service_url(stack, "gateway"),
            [
                "SELECT count(*) FROM identity.tenants",
                "SELECT count(*) FROM identity.api_keys",
                "UPDATE identity.tenants SET rate_limit_per_minute = 1",
                "DELETE FROM identity.api_keys",
                "SELECT count(*) FROM identity.audit_log",
                "SELECT count(*) FROM webhooks.endpoints",
            ],
        )
    )
    assert list(answered.values()) == ["ok", "ok"] + ["InsufficientPrivilegeError"] * 4, answered


def test_a_service_role_must_prove_its_password(stack: Stack) -> None:
    """The embedded PostgreSQL (make run, the tests) trusted every local connection,
    so any local process could log in as any service role and the per-service roles held by
    convention only. Now every service role's password is checked (scram-sha-256): a wrong
    one is refused, the role's own is accepted."""
    url = make_url(service_url(stack, "ledger"))

    async def connect(password: str | None) -> str:
        kwargs = pg_kwargs(url.set(password=password).render_as_string(hide_password=False))
        try:
            conn = await asyncpg.connect(**kwargs)
        except asyncpg.InvalidPasswordError:
            return "refused"
        await conn.close()
        return "accepted"

    assert run_async(connect("not-" + (url.password or ""))) == "refused"
    assert run_async(connect(url.password)) == "accepted"
    # The rules for the way the services connect: the embedded server's socket (`local`), a
    # container's TCP port (`host`: its own socket, trusted as in the official image, is
    # reachable only inside the container).
    kinds = ["local"] if str(url.query.get("host", "")).startswith("/") else ["host", "hostssl", "hostnossl"]
    methods = catalog(
        stack,
        "SELECT DISTINCT auth_method FROM pg_hba_file_rules WHERE 'all' = ANY(user_name) AND type = ANY($1)",
        kinds,
    )
    assert {r["auth_method"] for r in methods} == {"scram-sha-256"}

"""Database wiring: one async engine per process, sessions, per-service migrations, and the
fencing check of a multi-host ``SLUICE_DATABASE_URL``.

Each service owns one PostgreSQL schema (``ledger``, ``compliance``, ``webhooks``,
``identity`` for admin, ``gateway``) and its own Alembic history in
``services/<service>/migrations`` with the version table inside that schema.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, event, text
from sqlalchemy.engine import URL, ExceptionContext, make_url
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine

from common.metrics import WRITABLE_HOSTS

ROOT = Path(__file__).resolve().parents[2]
log = logging.getLogger(__name__)


def create_engine(
    url: str,
    pool_size: int = 10,
    *,
    connect_timeout_s: float = 2.0,
    command_timeout_s: float = 10.0,
    pool_timeout_s: float = 2.0,
) -> AsyncEngine:
    """Every call is bounded: connecting, each statement, and waiting for a pooled connection.

    A timeout is a transient fault (:mod:`common.faults`): consumers wait it out, the HTTP
    services answer 503 at once. A connection severed by a restart is invalidated by
    SQLAlchemy and replaced on the next checkout. A URL naming several hosts connects to each
    in turn, each within ``connect_timeout_s`` (:mod:`common.db_hosts`,
    docs/operations/failover.md).
    """
    bounds: dict[str, Any] = {
        "connect_args": {"timeout": connect_timeout_s, "command_timeout": command_timeout_s}
    }
    if len(database_hosts(url)) > 1:  # several hosts: each within the timeout (common.db_hosts)
        from common.db_hosts import HostsInTurn

        bounds = {
            "async_creator": HostsInTurn(
                url, connect_timeout_s=connect_timeout_s, command_timeout_s=command_timeout_s
            )
        }
    engine = create_async_engine(
        url,
        pool_size=pool_size,
        max_overflow=pool_size,
        pool_pre_ping=False,
        pool_recycle=1800,
        pool_timeout=pool_timeout_s,
        **bounds,
    )
    event.listen(engine.sync_engine, "handle_error", timeout_is_a_lost_host)
    return engine


def timeout_is_a_lost_host(ctx: ExceptionContext) -> None:
    """A statement that ran out of ``command_timeout`` got no answer from its host: a hung
    primary (a paused machine, a partition that drops packets), where every other pooled
    connection to it would wait as long in turn. SQLAlchemy is told it is a disconnect: the
    connection is dropped without a ROLLBACK (which would wait again) and the whole pool is
    invalidated, so the next checkouts connect afresh and find the writable host
    (common.db_hosts). Measured on a hung primary in make chaos: RTO 10.6-10.9 s before."""
    if isinstance(ctx.original_exception, TimeoutError):
        ctx.is_disconnect = True
        # SQLAlchemy counts asyncio's TimeoutError among the "exit exceptions" (a cancelled
        # greenlet) and would invalidate this connection only: the pool's others stay.
        ctx.invalidate_pool_on_disconnect = True


def asyncpg_kwargs(url: str) -> dict[str, Any]:
    """``asyncpg.connect``'s arguments for a SQLAlchemy URL, as the services' engines build them
    (SQLAlchemy's asyncpg dialect): one host, a socket directory in ``?host=``, or several
    ``?host=h:p`` with ``target_session_attrs``, for tools that talk to the database without
    an engine."""
    from sqlalchemy.dialects.postgresql.asyncpg import PGDialect_asyncpg
    from sqlalchemy.engine import make_url

    _, kwargs = PGDialect_asyncpg().create_connect_args(make_url(url))
    return dict(kwargs)


def sessionmaker(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False)


@asynccontextmanager
async def transaction(sessions: async_sessionmaker[AsyncSession]) -> AsyncIterator[AsyncSession]:
    """The boundary's transaction: commit on success, roll back on error."""
    async with sessions() as session, session.begin():
        yield session


async def driver(session: AsyncSession) -> Any:
    """The session's asyncpg connection, for bulk statements (unnest) in one round trip.

    It is the same connection, so statements run inside the session's transaction.
    """
    conn = await session.connection()
    raw = await conn.get_raw_connection()
    adapted: Any = raw.dbapi_connection
    # SQLAlchemy's asyncpg adapter sends BEGIN lazily, with its first statement. A bulk
    # statement sent first would otherwise run in autocommit and survive a rollback.
    if getattr(adapted, "_transaction", False) is None and conn.in_transaction():
        await adapted._start_transaction()  # noqa: SLF001 - the adapter has no public way
    assert raw.driver_connection is not None
    return raw.driver_connection


async def ping(engine: AsyncEngine) -> None:
    async with engine.connect() as conn:
        await conn.execute(text("SELECT 1"))


@dataclass(frozen=True, slots=True)
class DbHost:
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


def database_hosts(url: str | URL) -> list[DbHost]:
    """The hosts a URL names, as the engine's dialect reads them: the libpq multi-host form
    (``host=a:5432&host=b:5432``, or ``host=a,b&port=5432,5433``), else the URL's one host. A
    multi-host URL without every port is refused, as the engine refuses it."""
    from sqlalchemy.dialects.postgresql.asyncpg import PGDialect_asyncpg

    _, opts = PGDialect_asyncpg().create_connect_args(make_url(url))
    host: Any = opts.get("host") or "localhost"
    port: Any = opts.get("port") or 5432
    if isinstance(host, list):
        return [DbHost(h, int(p)) for h, p in zip(host, port, strict=True)]
    return [DbHost(host, int(port))]


def writers(answers: Mapping[DbHost, bool | None]) -> list[DbHost]:
    """The hosts that accept writes, from each host's ``pg_is_in_recovery()`` (None: it did
    not answer, so it cannot take a write either)."""
    return [host for host, in_recovery in answers.items() if in_recovery is False]


Probe = Callable[[DbHost], Awaitable[bool | None]]


class Fencing:
    """When ``SLUICE_DATABASE_URL`` names several hosts, every ``interval_s`` (and once at
    start) ask each host whether it is in recovery. More than one that is not is a split brain:
    an old primary came back as a writer after a failover, and a service that reconnects
    (``target_session_attrs=read-write`` takes the first writable host of its list) may write to
    it. Reported by ``sluice_database_writable_hosts`` and an error log line naming the hosts
    (docs/operations/fencing.md); the check fences nothing itself.
    """

    def __init__(
        self, url: str, hosts: list[DbHost], *, interval_s: float = 30.0, timeout_s: float = 2.0
    ) -> None:
        self.url = make_url(url)
        self.hosts = hosts
        self.interval_s = interval_s
        self.timeout_s = timeout_s
        self.probe: Probe = self.in_recovery
        self.split = False

    @classmethod
    def of(cls, url: str, *, interval_s: float = 30.0, timeout_s: float = 2.0) -> Fencing | None:
        """The check for ``url``, or None when it names one host (nothing to compare)."""
        hosts = database_hosts(url)
        if len(hosts) < 2:
            return None
        return cls(url, hosts, interval_s=interval_s, timeout_s=timeout_s)

    async def in_recovery(self, host: DbHost) -> bool | None:
        """``pg_is_in_recovery()`` on ``host`` through a connection of its own, as the
        service's role; None when the host does not answer within ``timeout_s``."""
        import asyncpg

        u = self.url
        ssl = u.query.get("ssl")
        try:
            conn = await asyncpg.connect(
                host=host.host,
                port=host.port,
                user=u.username,
                password=u.password,
                database=u.database,
                timeout=self.timeout_s,
                command_timeout=self.timeout_s,
                ssl=ssl if isinstance(ssl, str) else None,
            )
        except Exception:  # noqa: BLE001 - a host that does not answer takes no write
            return None
        try:
            return bool(await conn.fetchval("SELECT pg_is_in_recovery()"))
        except Exception:  # noqa: BLE001 - as above
            return None
        finally:
            conn.terminate()

    async def check(self) -> list[DbHost]:
        answers = await asyncio.gather(*(self.probe(h) for h in self.hosts))
        writable = writers(dict(zip(self.hosts, answers, strict=True)))
        WRITABLE_HOSTS.set(len(writable))
        if len(writable) > 1:
            self.split = True
            log.error(
                "database fencing: %d hosts of SLUICE_DATABASE_URL accept writes: %s; only the"
                " promoted primary may: fence the others (docs/operations/fencing.md)",
                len(writable),
                ", ".join(map(str, writable)),
            )
        elif self.split:
            self.split = False
            log.warning(
                "database fencing: %d host(s) of SLUICE_DATABASE_URL accept writes again", len(writable)
            )
        return writable

    async def run(self) -> None:
        """The supervised loop (``common.tasks.Supervisor``): a check, then one every interval."""
        while True:
            await self.check()
            await asyncio.sleep(self.interval_s)


def migrate(service: str, url: str) -> None:
    """Apply ``services/<service>/migrations`` up to head (blocking)."""
    from alembic import command
    from alembic.config import Config

    alembic_config = Config()
    alembic_config.set_main_option("script_location", str(ROOT / "services" / service / "migrations"))
    alembic_config.attributes["url"] = url  # not a main option: URLs may hold '%' (socket paths)
    command.upgrade(alembic_config, "head")


def run_alembic_env(schema: str, target_metadata: Any = None) -> None:
    """Body of every service's ``migrations/env.py``: online, async, version table in schema.

    ``target_metadata`` (the service's SQLModel tables) lets ``alembic revision
    --autogenerate`` and the drift test compare the models with the migrations; only objects
    of the service's own schema are compared.
    """
    from alembic import context

    config = context.config
    url = config.attributes["url"]

    def do_run(connection: Connection) -> None:
        context.configure(
            connection=connection,
            target_metadata=target_metadata,
            version_table_schema=schema,
            include_schemas=True,
            include_name=lambda name, type_, _parent: type_ != "schema" or name == schema,
            include_object=lambda obj, _n, type_, _r, _c: (
                type_ != "table" or getattr(obj, "schema", None) == schema
            ),
            compare_type=True,
        )
        with context.begin_transaction():
            context.run_migrations()

    async def run() -> None:
        engine = create_async_engine(url)
        async with engine.begin() as conn:
            await conn.execute(text(f'CREATE SCHEMA IF NOT EXISTS "{schema}"'))
        async with engine.connect() as conn:
            await conn.run_sync(do_run)
            await conn.commit()
        await engine.dispose()

    asyncio.run(run())


Migration = tuple[Callable[[], None], Callable[[], None]]
"""A migration's ``upgrade`` and ``downgrade``."""


def sql_migration(up: Sequence[str], down: Sequence[str]) -> Migration:
    """The upgrade and downgrade of a migration that only runs SQL statements, in order.

    Alembic needs only a revision module's ``revision``, ``down_revision``, ``upgrade`` and
    ``downgrade`` (it logs the last two by ``__name__``), so a migration that is SQL only reads
    ``upgrade, downgrade = sql_migration(up=[...], down=[...])``; one that needs Python
    between its statements keeps its own ``def upgrade()``.
    """
    from alembic import op

    up, down = tuple(up), tuple(down)

    def upgrade() -> None:
        for statement in up:
            op.execute(statement)

    def downgrade() -> None:
        for statement in down:
            op.execute(statement)

    return upgrade, downgrade


def outbox_migration(schema: str) -> Migration:
    """The migration that gives ``schema`` its outbox (:func:`outbox_ddl`)."""
    return sql_migration(up=outbox_ddl(schema), down=[f"DROP TABLE {schema}.outbox"])


def outbox_ddl(schema: str) -> list[str]:
    return [
        f"""CREATE TABLE IF NOT EXISTS {schema}.outbox (
            id BIGSERIAL PRIMARY KEY,
            topic TEXT NOT NULL,
            key BYTEA,
            partition INTEGER,
            payload BYTEA NOT NULL,
            created_at TIMESTAMPTZ NOT NULL DEFAULT now()
        )""",
    ]


def inbox_ddl(schema: str) -> list[str]:
    return [
        f"""CREATE TABLE IF NOT EXISTS {schema}.inbox (
            command_id TEXT PRIMARY KEY,
            result BYTEA,
            processed_at TIMESTAMPTZ NOT NULL DEFAULT now()
        )""",
    ]

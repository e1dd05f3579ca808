"""Database wiring: one async engine per process, sessions, and per-service migrations.

Each service owns one PostgreSQL schema (``ledger``, ``compliance``, ``webhooks``,
``identity`` for admin, ``gateway``) and its own Alembic history in
``services/<service>/migrations`` with the version table inside that schema.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine

ROOT = Path(__file__).resolve().parents[2]


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
    SQLAlchemy and replaced on the next checkout.
    """
    return create_async_engine(
        url,
        pool_size=pool_size,
        max_overflow=pool_size,
        pool_pre_ping=False,
        pool_recycle=1800,
        pool_timeout=pool_timeout_s,
        connect_args={"timeout": connect_timeout_s, "command_timeout": command_timeout_s},
    )


def asyncpg_kwargs(url: str) -> dict[str, Any]:
    """``asyncpg.connect``'s arguments for a SQLAlchemy URL, as the services' engines build them
    (SQLAlchemy's asyncpg dialect): one host, a socket directory in ``?host=``, or several
    ``?host=h:p`` with ``target_session_attrs`` (contract 15.2), for tools that talk to the
    database without an engine."""
    from sqlalchemy.dialects.postgresql.asyncpg import PGDialect_asyncpg
    from sqlalchemy.engine import make_url

    _, kwargs = PGDialect_asyncpg().create_connect_args(make_url(url))
    return dict(kwargs)


def sessionmaker(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False)


@asynccontextmanager
async def transaction(sm: async_sessionmaker[AsyncSession]) -> AsyncIterator[AsyncSession]:
    """The boundary's transaction: commit on success, roll back on error."""
    async with sm() as session, session.begin():
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


def migrate(service: str, url: str) -> None:
    """Apply ``services/<service>/migrations`` up to head (blocking)."""
    from alembic import command
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(ROOT / "services" / service / "migrations"))
    cfg.attributes["url"] = url  # not a main option: URLs may hold '%' (socket paths)
    command.upgrade(cfg, "head")


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

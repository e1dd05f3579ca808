"""Tables every service shares the shape of (outbox, inbox), declared once; the column fields
and base models (:class:`TenantRow`, :class:`TenantModeKey`) the services declare their
tables with; and the check that a service's declared tables and its migrations agree.

Each service declares its own tables as SQLModel models in ``<service>/models.py`` (one
PostgreSQL schema per service, unique class names: all models share ``SQLModel.metadata``)
and calls :func:`outbox_table` / :func:`inbox_table` for the shared shapes in its schema.
``migrations/env.py`` hands that metadata to :func:`common.db.run_alembic_env`, so
``alembic revision --autogenerate`` writes the next migration and :func:`schema_drift`
(run by the tests) fails when models and migrations disagree.
"""

from __future__ import annotations

from typing import Any, TypeAlias

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Column,
    DateTime,
    Integer,
    LargeBinary,
    MetaData,
    Row,
    Table,
    Text,
    func,
)
from sqlalchemy import inspect as sa_inspect
from sqlmodel import Field, SQLModel

from common.contracts.base import Mode

#: A row read from a declared table (columns by attribute, as the select named them).
AnyRow: TypeAlias = Row[*tuple[Any, ...]]


def _table(schema: str, name: str, *columns: Column[Any] | CheckConstraint) -> Table:
    """The table ``schema.name`` in ``SQLModel.metadata``, declared on the first call."""
    found = SQLModel.metadata.tables.get(f"{schema}.{name}")
    return found if found is not None else Table(name, SQLModel.metadata, *columns, schema=schema)


def table_of(model: type[SQLModel]) -> Table:
    """A ``table=True`` model's Core table, for statements built with SQLAlchemy Core."""
    table: Table = model.__table__  # type: ignore[attr-defined]  # SQLModel's stubs omit the __table__ SQLAlchemy sets (upstream typing gap)
    return table


def values_of(row: SQLModel) -> dict[str, Any]:
    """The column values a table model's instance was built with, keyed by column, for an
    ``insert(table).values(...)``: the columns it was not given take their defaults."""
    given = row.model_fields_set
    attrs = sa_inspect(type(row)).column_attrs
    return {a.columns[0].key: getattr(row, a.key) for a in attrs if a.key in given}


def now_field() -> Any:
    """A SQLModel field for a ``timestamptz NOT NULL DEFAULT now()`` column."""
    return Field(sa_column=Column(DateTime(timezone=True), nullable=False, server_default=func.now()))


def time_field(*, nullable: bool = False) -> Any:
    """A SQLModel field for a ``timestamptz`` column without a default, ``NOT NULL`` unless
    ``nullable`` (then the field defaults to None)."""
    if nullable:
        return Field(default=None, sa_column=Column(DateTime(timezone=True), nullable=True))
    return Field(sa_column=Column(DateTime(timezone=True), nullable=False))


def text_field(
    *, nullable: bool = False, primary_key: bool = False, foreign_key: str | None = None, unique: bool = False
) -> Any:
    """A SQLModel field for a ``text`` column, ``NOT NULL`` unless ``nullable`` (then the field
    defaults to None); ``foreign_key`` names the referenced column (``schema.table.column``).

    Declared by type (``sa_type``), not as a ``Column``: SQLModel builds a new column for each
    table from it, so the field also serves in a base model that several tables inherit (a
    ``Column`` object belongs to one table)."""
    if nullable:
        return Field(default=None, sa_type=Text, nullable=True, foreign_key=foreign_key, unique=unique)
    return Field(
        sa_type=Text, nullable=False, primary_key=primary_key, foreign_key=foreign_key, unique=unique
    )


class TenantRow(SQLModel):
    """The columns a per-tenant table starts with: its text id, then the tenant and mode that
    own the row. A base model, not a table (SQLModel's ``HeroBase`` pattern): each table
    that inherits it gets columns of its own, built from these fields, in this order."""

    id: str = text_field(primary_key=True)
    tenant_id: str = text_field()
    mode: Mode = text_field()


class TenantModeKey(SQLModel):
    """``(tenant_id, mode)`` leading the primary key of a table kept per tenant and mode."""

    tenant_id: str = text_field(primary_key=True)
    mode: Mode = text_field(primary_key=True)


def outbox_table(schema: str, *, answers_from_inbox: bool = False) -> Table:
    """``<schema>.outbox``: messages written with the state they describe (common.outbox).

    ``answers_from_inbox``: a row may name, instead of carrying its payload, the command whose
    result in ``<schema>.inbox`` it is (``payload_of``): an answer is kept once, by the inbox."""
    payload: list[Column[Any] | CheckConstraint]
    if not answers_from_inbox:
        payload = [Column("payload", LargeBinary, nullable=False)]
    else:
        payload = [
            Column("payload", LargeBinary),
            Column("payload_of", Text),
            CheckConstraint("payload IS NOT NULL OR payload_of IS NOT NULL", name="outbox_payload_or_inbox"),
        ]
    return _table(
        schema,
        "outbox",
        Column("id", BigInteger, primary_key=True, autoincrement=True),
        Column("topic", Text, nullable=False),
        Column("key", LargeBinary),
        Column("partition", Integer),
        *payload,
        Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    )


def inbox_table(schema: str) -> Table:
    """``<schema>.inbox``: processed command ids and their results (common.inbox)."""
    return _table(
        schema,
        "inbox",
        Column("command_id", Text, primary_key=True),
        Column("result", LargeBinary),
        Column("processed_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    )


async def schema_drift(url: str, schema: str, metadata: MetaData | None = None) -> list[Any]:
    """Alembic's differences between the declared tables of ``schema`` and the database
    (migrated to head): empty when models and migrations agree."""
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext
    from sqlalchemy.ext.asyncio import create_async_engine

    md = metadata or SQLModel.metadata

    def include_name(name: str | None, type_: str, parent: Any) -> bool:
        if type_ == "schema":
            return name == schema
        if type_ == "table":
            return name != "alembic_version"
        return True

    def compare(conn: Any) -> list[Any]:
        ctx = MigrationContext.configure(
            conn,
            opts={
                "include_schemas": True,
                "include_name": include_name,
                "include_object": lambda obj, _n, type_, _r, _c: type_ != "table" or obj.schema == schema,
                "compare_type": True,
                "target_metadata": md,
            },
        )
        return list(compare_metadata(ctx, md))

    engine = create_async_engine(url)
    try:
        async with engine.connect() as conn:
            return await conn.run_sync(compare)
    finally:
        await engine.dispose()

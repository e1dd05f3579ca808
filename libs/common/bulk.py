"""Batch statements sent straight to asyncpg: one round trip for a batch step, prepared once.

A consumer's batch step (claim and read, lock, write) is one statement of several CTEs, each
fed one array per column (``unnest``), so its text never depends on the batch: asyncpg
prepares it once per connection and every later batch only binds arrays. The statements are
built at import from the services' declared tables (:class:`Statement`), and run inside the
session's transaction (:func:`fetch`, on the session's own connection).

Why not SQLAlchemy's execution path here: its compile cache, parameter processing and
result rows cost more Python time per statement than asyncpg's whole round trip, and it
cannot send several unrelated reads or writes as one statement anyway.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec
from sqlalchemy import Column, Table
from sqlalchemy.dialects import postgresql
from sqlalchemy.types import JSON

from common import failpoints
from common.db import driver

_PG = postgresql.dialect()


def pg_type(column: Column[Any]) -> str:
    """The column's type as PostgreSQL spells it (``TEXT``, ``NUMERIC(38, 6)``...)."""
    return str(column.type.compile(dialect=_PG))


def is_json(column: Column[Any]) -> bool:
    return isinstance(column.type, JSON)


def qualified(table: Table) -> str:
    return f"{table.schema}.{table.name}" if table.schema else table.name


class Statement:
    """The numbered parameters of one statement, by name, in the order the text uses them."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def param(self, name: str, pgtype: str) -> str:
        """``$n::pgtype``, the same ``n`` each time ``name`` is used."""
        if name not in self.names:
            self.names.append(name)
        return f"${self.names.index(name) + 1}::{pgtype}"

    def rows(self, prefix: str, table: Table, columns: Sequence[str]) -> str:
        """A ``SELECT`` of rows for ``columns`` of ``table``, one array per column (parameters
        ``<prefix>.<column>``); JSON columns travel as text and are cast here."""
        arrays = []
        picks = []
        for name in columns:
            col = table.c[name]
            json = is_json(col)
            arrays.append(self.param(f"{prefix}.{name}", "TEXT[]" if json else f"{pg_type(col)}[]"))
            picks.append(f"v.{name}::{pg_type(col)}" if json else f"v.{name}")
        return f"SELECT {', '.join(picks)} FROM unnest({', '.join(arrays)}) AS v({', '.join(columns)})"

    def insert(self, prefix: str, table: Table, columns: Sequence[str], tail: str = "") -> str:
        """``INSERT INTO table (columns) SELECT ...`` from one array per column, then ``tail``
        (``ON CONFLICT ...``, ``RETURNING ...``)."""
        head = f"INSERT INTO {qualified(table)} ({', '.join(columns)}) {self.rows(prefix, table, columns)}"
        return f"{head} {tail}".strip()

    def args(self, values: Mapping[str, Any]) -> list[Any]:
        """The arguments in parameter order (every name must be given)."""
        return [values[name] for name in self.names]


def columns_of(
    table: Table,
    rows: Sequence[Mapping[str, Any]],
    prefix: str,
    columns: Sequence[str],
    encoded: Sequence[str] = (),
) -> dict[str, list[Any]]:
    """``rows`` as one list per column, keyed ``<prefix>.<column>``: the arrays of
    :meth:`Statement.rows`. JSON columns are encoded here (text), but those named in
    ``encoded``, whose values are JSON text already."""
    out: dict[str, list[Any]] = {}
    for name in columns:
        values = [r.get(name) for r in rows]
        if is_json(table.c[name]) and name not in encoded:
            values = [None if v is None else msgspec.json.encode(v).decode() for v in values]
        out[f"{prefix}.{name}"] = values
    return out


async def fetch(session: Any, sql: str, args: Sequence[Any]) -> list[Any]:
    """Run one statement in the session's transaction (asyncpg prepares and caches it)."""
    failpoints.hit("db.statement")  # the deterministic simulation crashes at any statement
    conn = await driver(session)
    return list(await conn.fetch(sql, *args))

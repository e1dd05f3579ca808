"""Helpers the ledger's SQL modules share: typed rows out of statements, tenant scope."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, and_
from sqlalchemy import inspect as sa_inspect
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import configure_mappers
from sqlmodel import SQLModel

from common.contracts.base import Mode

M = TypeVar("M", bound=SQLModel)


async def one_of(session: AsyncSession, model: type[M], stmt: Any) -> M | None:
    """The first row of ``stmt`` as a detached ``model`` (None without a row)."""
    row = (await session.execute(stmt)).mappings().first()
    return None if row is None else model(**row)


_BLANK: dict[type[Any], dict[str, None]] = {}


def read_only(model: type[M], values: Mapping[Any, Any]) -> M:
    """A read-only ``model`` over ``values`` without validation or ORM instrumentation: what
    the hot path reads (wallets of a batch, a transfer's state for its events). Building a
    table model with ``__init__`` validates every field and sets up ORM state: 78 us a transfer
    row against 8 us here. Columns missing from ``values`` read as None; setting an
    attribute raises (no ORM state), so it is only for rows the caller never writes back."""
    blank = _BLANK.get(model)
    if blank is None:
        configure_mappers()
        blank = _BLANK[model] = {c.key: None for c in sa_inspect(model).columns}
    return model.model_construct(**{**blank, **values})


async def all_read_only(session: AsyncSession, model: type[M], stmt: Any) -> list[M]:
    """Every row of ``stmt`` as a :func:`read_only` ``model``."""
    return [read_only(model, row) for row in (await session.execute(stmt)).mappings()]


async def all_of(session: AsyncSession, model: type[M], stmt: Any) -> list[M]:
    """Every row of ``stmt`` as detached ``model`` instances."""
    return [model(**row) for row in (await session.execute(stmt)).mappings()]


def scope(table: Any, tenant_id: str, mode: Mode) -> ColumnElement[bool]:
    """One tenant's rows in one mode."""
    return and_(table.c.tenant_id == tenant_id, table.c.mode == mode)

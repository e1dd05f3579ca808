"""Helpers the ledger's SQL modules share: typed rows out of statements, tenant scope."""

from __future__ import annotations

from typing import Any, TypeVar

from sqlalchemy import ColumnElement, and_
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import SQLModel

from common.contracts.base import Mode

M = TypeVar("M", bound=SQLModel)


async def one_of(session: AsyncSession, model: type[M], stmt: Any) -> M | None:
    """The first row of ``stmt`` as a detached ``model`` (None without a row)."""
    row = (await session.execute(stmt)).mappings().first()
    return None if row is None else model(**row)


async def all_of(session: AsyncSession, model: type[M], stmt: Any) -> list[M]:
    """Every row of ``stmt`` as detached ``model`` instances."""
    return [model(**row) for row in (await session.execute(stmt)).mappings()]


def scope(table: Any, tenant_id: str, mode: Mode) -> ColumnElement[bool]:
    """One tenant's rows in one mode."""
    return and_(table.c.tenant_id == tenant_id, table.c.mode == mode)

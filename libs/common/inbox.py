"""Inbox: each processed command id is recorded with its result in the same transaction
as the command's effects, so a redelivered command changes nothing and answers the same."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from common.db import driver


class Inbox:
    def __init__(self, schema: str) -> None:
        self.schema = schema

    async def seen(self, session: AsyncSession, command_ids: list[str]) -> dict[str, bytes | None]:
        """Results already recorded for these ids (locks nothing; use claim for that)."""
        if not command_ids:
            return {}
        rows = await session.execute(
            text(f"SELECT command_id, result FROM {self.schema}.inbox WHERE command_id = ANY(:ids)"),
            {"ids": command_ids},
        )
        return {r.command_id: (bytes(r.result) if r.result is not None else None) for r in rows}

    async def claim(self, session: AsyncSession, command_id: str) -> tuple[bool, bytes | None]:
        """(True, None) if new in this transaction; else (False, the stored result).

        A concurrent claimer of the same id blocks until the first transaction ends.
        """
        row = (
            await session.execute(
                text(
                    f"INSERT INTO {self.schema}.inbox (command_id) VALUES (:id) "
                    "ON CONFLICT DO NOTHING RETURNING command_id"
                ),
                {"id": command_id},
            )
        ).first()
        if row is not None:
            return True, None
        prev = (
            await session.execute(
                text(f"SELECT result FROM {self.schema}.inbox WHERE command_id = :id"),
                {"id": command_id},
            )
        ).first()
        return False, (bytes(prev.result) if prev and prev.result is not None else None)

    async def record(self, session: AsyncSession, command_id: str, result: bytes) -> None:
        await session.execute(
            text(f"UPDATE {self.schema}.inbox SET result = :r WHERE command_id = :id"),
            {"r": result, "id": command_id},
        )

    async def claim_many(
        self, session: AsyncSession, command_ids: list[str]
    ) -> tuple[set[str], dict[str, bytes | None]]:
        """Claim a batch in one round trip: (ids new in this transaction, results of the rest).

        Ids must be distinct. A concurrent claimer of the same id blocks until the first
        transaction ends, as with :meth:`claim`.
        """
        if not command_ids:
            return set(), {}
        conn = await driver(session)
        rows = await conn.fetch(
            f"INSERT INTO {self.schema}.inbox (command_id) SELECT unnest($1::text[]) "
            "ON CONFLICT DO NOTHING RETURNING command_id",
            command_ids,
        )
        fresh = {r["command_id"] for r in rows}
        seen = [c for c in command_ids if c not in fresh]
        return fresh, await self.seen(session, seen)

    async def record_many(self, session: AsyncSession, results: dict[str, bytes]) -> None:
        """Store the results of claimed ids in one round trip."""
        if not results:
            return
        conn = await driver(session)
        await conn.execute(
            f"UPDATE {self.schema}.inbox AS i SET result = v.r "
            "FROM unnest($1::text[], $2::bytea[]) AS v(id, r) WHERE i.command_id = v.id",
            list(results),
            list(results.values()),
        )

"""Cursor pages: ``{items, next_cursor}``, ``next_cursor`` null at the end
(docs/reference/index.md, "Conventions every resource follows").

A repository reads ``limit + 1`` rows, newest first, keyset on the cursor row; the extra row
only says that another page exists and is never shown.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from common.errors import invalid

R = TypeVar("R")


def _row_id(row: Any) -> Any:
    return row.id


def page(
    rows: Sequence[R],
    limit: int,
    view: Callable[[R], dict[str, Any]],
    cursor: Callable[[R], Any] = _row_id,
) -> dict[str, Any]:
    """The page of ``rows`` (up to ``limit + 1`` read): each shown row through ``view``; the
    next cursor (``cursor`` of the last shown row, as a string) only when more exist."""
    shown = rows[:limit]
    more = len(rows) > limit and len(shown) > 0
    return {"items": [view(r) for r in shown], "next_cursor": str(cursor(shown[-1])) if more else None}


def seq_cursor(value: str | None, lister: str) -> int | None:
    """A cursor over a sequence column (the audit log, dead letters): the decimal text ``page``
    handed out, or a 400 on ``cursor`` naming the list action it came from."""
    if value is None:
        return None
    if not value.isdigit():
        raise invalid("cursor", f"not a cursor returned by {lister}")
    return int(value)

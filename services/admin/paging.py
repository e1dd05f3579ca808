"""Cursor pages (contract section 5): ``{items, next_cursor}``, ``next_cursor`` null at the end."""

from __future__ import annotations

from typing import Any


def page_of(items: list[dict[str, Any]], limit: int, id_field: str) -> dict[str, Any]:
    """``items`` holds up to ``limit + 1`` rows: the extra one only says another page exists."""
    more = len(items) > limit
    items = items[:limit]
    return {"items": items, "next_cursor": str(items[-1][id_field]) if more and items else None}

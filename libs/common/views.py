"""Response objects built from rows: one way to say "these columns, under these names"."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from common.times import iso


def columns(row: Any, *names: str, **renamed: str) -> dict[str, Any]:
    """``{name: row.name}`` for each of ``names``, then ``{key: row.<column>}`` for each
    ``key=column`` of ``renamed``, in that order; datetimes become ISO 8601 text
    (:func:`common.times.iso`), everything else is taken as it is."""
    out: dict[str, Any] = {}
    for key, column in [*((n, n) for n in names), *renamed.items()]:
        value = getattr(row, column)
        out[key] = iso(value) if isinstance(value, datetime) else value
    return out

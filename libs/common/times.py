"""Time as partners see it: RFC 3339 in UTC with a ``Z`` (docs/reference/index.md, "Conventions
every resource follows")."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import overload


@overload
def iso(ts: datetime) -> str: ...
@overload
def iso(ts: None) -> None: ...
@overload
def iso(ts: datetime | None) -> str | None: ...


def iso(ts: datetime | None) -> str | None:
    """``2026-01-02T03:04:05.123456Z``; None stays None. A naive time is taken as UTC."""
    if ts is None:
        return None
    utc = ts.astimezone(UTC) if ts.tzinfo is not None else ts.replace(tzinfo=UTC)
    return utc.isoformat().replace("+00:00", "Z")


def iso_from_epoch(seconds: float) -> str:
    """A Unix time (seconds) in the same form."""
    return iso(datetime.fromtimestamp(seconds, UTC))

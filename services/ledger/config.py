"""The ledger's runtime knobs, read from Settings in ``create_app`` and handed to every command.

Apart from what a command produces (``ledger.core.effects``): the knobs name I/O (the anchors
topic's reader), which the session-free core must not see.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ledger.anchor_stream import Found


@dataclass(frozen=True)
class LedgerConfig:
    """Read from Settings in create_app and handed to every command."""

    settle_s: float = 2.0
    # What the anchors topic holds (ledger.anchors.Anchors.read); None: anchoring is off
    # (development without SLUICE_JOURNAL_ANCHOR_KEY).
    read_anchors: Callable[[], Awaitable[Found]] | None = None
    # A chain whose first entry is older than this and has no anchor is a finding
    # (``anchors_missing``): three anchoring intervals (SLUICE_JOURNAL_ANCHOR_INTERVAL_S), at
    # least 30 s (ledger.app).
    anchor_grace_s: float = 30.0

"""Identifiers: prefixed, time-ordered (so lists sort newest first by id)."""

from __future__ import annotations

import os
import time


def new_id(prefix: str) -> str:
    """``<prefix>_`` + 48-bit ms timestamp + 80 random bits, hex: sortable by creation."""
    return f"{prefix}_{int(time.time() * 1000):012x}{os.urandom(10).hex()}"

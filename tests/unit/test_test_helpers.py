"""The suite's own waiting helpers fail when what they wait for does not happen (a
helper that returned what it had on a timeout made its caller's check always true)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.support import webhooks as support

pytestmark = pytest.mark.unit


def test_wait_delivery_fails_on_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    async def pending_only(stack: Any, webhook_id: str) -> list[dict[str, str]]:
        return [{"status": "pending"}, {"status": "failed"}]

    monkeypatch.setattr(support, "deliveries_of", pending_only)
    with pytest.raises(AssertionError, match=r"succeeded deliveries of wh_1 not in 0\.3 s"):
        asyncio.run(support.wait_delivery(None, "wh_1", "succeeded", timeout=0.3))  # type: ignore[arg-type]


def test_wait_delivery_returns_once_enough_have_the_status(monkeypatch: pytest.MonkeyPatch) -> None:
    async def two_done(stack: Any, webhook_id: str) -> list[dict[str, str]]:
        return [{"status": "succeeded"}, {"status": "succeeded"}, {"status": "pending"}]

    monkeypatch.setattr(support, "deliveries_of", two_done)
    rows = asyncio.run(support.wait_delivery(None, "wh_1", "succeeded", timeout=5, count=2))  # type: ignore[arg-type]
    assert len(rows) == 3

"""The chaos audit's questions to admin: reconcile and verify_journal (what each checks:
docs/operations/backups.md, "How to check a restore")."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception_type,
    retry_if_result,
    stop_after_delay,
    wait_fixed,
)


def _unavailable(r: httpx.Response) -> bool:
    return r.status_code == 503


def _last_outcome(state: RetryCallState) -> httpx.Response:
    assert state.outcome is not None
    return state.outcome.result()  # the last answer (or its exception, raised)


async def call(url: str, token: str, body: dict[str, Any]) -> httpx.Response:
    async with httpx.AsyncClient(timeout=120) as client:

        async def post() -> httpx.Response:
            return await client.post(url, json=body, headers={"Authorization": f"Bearer {token}"})

        # admin may still be coming back from its SIGKILL, or a store of its from a fault (a
        # 503, retried as an operator would): wait for it, not for an answer
        retrying = AsyncRetrying(
            retry=retry_if_exception_type(httpx.TransportError) | retry_if_result(_unavailable),
            stop=stop_after_delay(60),
            wait=wait_fixed(1),
            retry_error_callback=_last_outcome,
        )
        return await retrying(post)


async def reconcile(url: str, token: str, tenant_id: str, log: Callable[[str], None]) -> int:
    """Admin's reconcile of the load's tenant: the discrepancies it lists, -1 when it could
    not answer."""
    r = await call(url, token, {"action": "reconcile", "tenant_id": tenant_id, "mode": "sandbox"})
    if r.status_code != 200:
        log(f"reconcile failed: {r.status_code} {r.text[:300]}")
        return -1
    data = r.json()["data"]
    for d in data["discrepancies"][:5]:
        log(f"reconcile: {d}")
    log(f"reconcile: ok {data['ok']} currencies {data['currencies']}")
    return len(data["discrepancies"])


async def verify_journal(url: str, token: str, entries: int, log: Callable[[str], None]) -> int:
    """Admin's verify_journal of every chain: 0 when it is ok and covers all ``entries`` of
    the journal, else 1."""
    r = await call(url, token, {"action": "verify_journal"})
    data = r.json().get("data") if r.status_code == 200 else None
    log(f"verify_journal: {data if data is not None else r.text[:300]} (journal: {entries} entries)")
    return 0 if data is not None and data["ok"] and data["entries"] == entries else 1

"""What ``make compose-check`` does as a partner, against the published gateway and admin.

Set-up through the APIs (tools.stack.provision), a webhook endpoint, one book transfer whose
delivery is verified with the Python SDK, then transfers from eight clients with the ledger's
container SIGKILLed a third of the way (tools.chaos.clients: one Idempotency-Key per transfer,
retried until a definitive answer), and the audit: nothing lost, nothing duplicated.
"""

from __future__ import annotations

import asyncio
import json
import random
import subprocess  # the tools start local processes  # nosec B404
import time
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx

from sluice_sdk import verify_webhook
from tools.chaos.clients import Booking, Progress, book
from tools.stack.provision import SCOPES, provision

GATEWAY = "http://127.0.0.1:8000"
ADMIN = "http://127.0.0.1:8001"
FUNDING = Decimal("1000.00")  # the second wallet's; the first (the hot one) gets 100x
TRANSFERS = 240
CLIENTS = 8
SETTLE_S = 180.0


def _approvers(work: Path) -> tuple[str, str]:
    """alice's and bob's tokens from the check's settings: production runs four eyes, so what
    one proposes (an API key, a cap) the other approves."""
    for line in (work / ".env").read_text().splitlines():
        if line.startswith("SLUICE_ADMIN_TOKEN="):
            alice, bob = (entry.split("=", 1)[1] for entry in line.split("=", 1)[1].split(","))
            return alice, bob
    raise KeyError("SLUICE_ADMIN_TOKEN")


async def _webhook(c: httpx.AsyncClient, key: str, endpoint: str) -> str:
    """A webhook endpoint for transfer events; its signing secret."""
    body = {"endpoint_url": endpoint, "enabled_events": ["transfer.created", "transfer.updated"]}
    hs = {"Authorization": f"Bearer {key}", "Idempotency-Key": uuid.uuid4().hex}
    r = await c.post(GATEWAY + "/v1/webhooks", json=body, headers=hs)
    if r.status_code not in (200, 201):
        raise AssertionError(f"POST /v1/webhooks: {r.status_code} {r.text[:300]}")
    return str(r.json()["data"]["signing_secret"])


async def _load(key: str, wallets: list[str], kill: list[str], restart: list[str]) -> Progress:
    """TRANSFERS book transfers from CLIENTS clients; the kill a third of the way through."""
    p = Progress(total=TRANSFERS)
    third = asyncio.Event()
    queue = [
        Booking(uuid.uuid4().hex, wallets[0], wallets[1], Decimal(random.randint(1, 100)) / 100, 0.0)
        for _ in range(TRANSFERS)
    ]
    async with httpx.AsyncClient() as c:

        async def client() -> None:
            while queue:
                b = queue.pop()
                b.started = time.monotonic()
                p.issued += 1
                if p.issued >= TRANSFERS // 3:
                    third.set()
                p.bookings.append(b)
                await book(c, [GATEWAY], key, b, p, deadline_s=SETTLE_S)

        async def fault() -> None:
            await third.wait()
            await _run(kill)
            print(f"compose-check: ledger SIGKILLed after {p.issued} transfers issued")
            await asyncio.sleep(3)
            await _run(restart)

        await asyncio.gather(fault(), *(client() for _ in range(CLIENTS)))
    return p


async def _run(cmd: list[str]) -> None:
    proc = await asyncio.create_subprocess_exec(*cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if await proc.wait() != 0:
        raise AssertionError(f"{' '.join(cmd)} failed")


async def _settled(c: httpx.AsyncClient, key: str, ids: list[str]) -> dict[str, str]:
    """Each transfer's state once none is still moving (or SETTLE_S runs out)."""
    hs = {"Authorization": f"Bearer {key}"}
    deadline = time.monotonic() + SETTLE_S
    states: dict[str, str] = {}
    while True:
        for tid in ids:
            if states.get(tid) not in ("completed", "failed"):
                r = await c.get(f"{GATEWAY}/v1/transfers/{tid}", headers=hs)
                states[tid] = r.json()["data"]["state"] if r.status_code == 200 else f"http {r.status_code}"
        if all(s in ("completed", "failed") for s in states.values()) or time.monotonic() > deadline:
            return states
        await asyncio.sleep(1)


async def _balance(c: httpx.AsyncClient, key: str, wallet: str) -> Decimal:
    r = await c.get(f"{GATEWAY}/v1/wallets/{wallet}", headers={"Authorization": f"Bearer {key}"})
    return Decimal(r.json()["data"]["available_balance"])


def _delivered(work: Path, secret: str) -> dict[str, set[str]]:
    """Every delivery verified with the SDK: the states delivered per transfer."""
    states: dict[str, set[str]] = {}
    path = work / "deliveries.jsonl"
    for line in path.read_text().splitlines() if path.exists() else []:
        got = json.loads(line)
        event: Any = verify_webhook(got["body"], got["headers"], secret)
        data = event["data"]
        states.setdefault(str(data["transfer_id"]), set()).add(str(data.get("state")))
    return states


async def _deliveries(work: Path, secret: str, ids: list[str]) -> dict[str, set[str]]:
    deadline = time.monotonic() + SETTLE_S
    while True:
        states = _delivered(work, secret)
        if all("completed" in states.get(t, set()) for t in ids) or time.monotonic() > deadline:
            return states
        await asyncio.sleep(1)


async def run_partner(work: Path, endpoint: str, kill: list[str], restart: list[str]) -> None:
    alice, bob = _approvers(work)
    scopes = [*SCOPES, "webhooks:write"]
    key, wallets = await provision(GATEWAY, ADMIN, alice, 2, scopes=scopes, second=bob)
    async with httpx.AsyncClient(timeout=30) as c:
        secret = await _webhook(c, key, endpoint)
        one = Progress(total=1)
        first = Booking(uuid.uuid4().hex, wallets[0], wallets[1], Decimal("1.00"), time.monotonic())
        await book(c, [GATEWAY], key, first, one, deadline_s=60)
        assert first.transfer_id, f"the first transfer was refused: {first.status} {first.error}"
        got = await _deliveries(work, secret, [first.transfer_id])
        assert "completed" in got.get(first.transfer_id, set()), f"no verified delivery: {got}"
        print("compose-check: partner set-up, one transfer completed, its webhook verified")
    p = await _load(key, wallets, kill, restart)
    async with httpx.AsyncClient(timeout=30) as c:
        await _audit(c, work, key, secret, wallets, [first, *p.bookings])


async def _audit(
    c: httpx.AsyncClient, work: Path, key: str, secret: str, wallets: list[str], done: list[Booking]
) -> None:
    """Nothing lost (every booking decided, every accepted one completed and delivered),
    nothing duplicated (one transfer per booking, the balances moved by exactly those)."""
    undecided = [b for b in done if b.status is None or not b.transfer_id]
    assert not undecided, f"{len(undecided)} transfers without a definitive answer: {undecided[:3]}"
    ids = [str(b.transfer_id) for b in done]
    assert len(set(ids)) == len(ids), "one transfer id answered for two bookings"
    states = await _settled(c, key, ids)
    wrong = {t: s for t, s in states.items() if s != "completed"}
    assert not wrong, f"{len(wrong)} transfers not completed: {list(wrong.items())[:5]}"
    moved = sum((b.amount for b in done), Decimal(0))
    hot, other = await _balance(c, key, wallets[0]), await _balance(c, key, wallets[1])
    assert (hot, other) == (FUNDING * 100 - moved, FUNDING + moved), f"balances {hot} {other}, moved {moved}"
    delivered = await _deliveries(work, secret, ids)
    missing = [t for t in ids if "completed" not in delivered.get(t, set())]
    assert not missing, f"{len(missing)} completed transfers without a verified delivery"
    print(
        f"compose-check: {len(done)} transfers, every one completed once and delivered; "
        f"balances {hot} and {other} (moved {moved})"
    )

"""The chaos scenario's clients (its webhook receiver is tools.stack.receiver).

Each client books transfers one after another; each transfer keeps one Idempotency-Key and is
retried (alternating gateways, exponential backoff with jitter, honouring Retry-After) until a
definitive answer: a 2xx, or a 4xx other than 409 (still in progress) and 429. A 5xx, a
timeout or a refused connection is retried. A transfer without a definitive answer by the
deadline is undecided.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal

import httpx
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_delay

CALL_TIMEOUT_S = 15.0


@dataclass
class Booking:
    key: str
    source: str
    destination: str
    amount: Decimal
    started: float
    status: int | None = None  # the definitive answer's status; None = undecided
    transfer_id: str | None = None
    error: str = ""
    last_answer: str = ""  # the latest attempt's outcome, e.g. "503 provider_unavailable"
    decided_after_s: float = 0.0
    attempts: int = 0


@dataclass
class Progress:
    total: int
    issued: int = 0
    decided: int = 0
    # no transfer past this number is issued (None: no limit): the fault schedule holds the
    # load back until its faults have fired, so a fast suite cannot finish before them
    gate: int | None = None
    bookings: list[Booking] = field(default_factory=list)
    answers: Counter[str] = field(default_factory=Counter)  # every attempt's outcome
    # every attempt: (sent, answered) on time.monotonic() and its outcome ("201", "timeout"):
    # the timeline the recovery objectives are read from (chaos_audit.recovery)
    attempts: list[tuple[float, float, str]] = field(default_factory=list)


class _Again(Exception):
    def __init__(self, why: str, retry_after: float = 0.0) -> None:
        super().__init__(why)
        self.retry_after = retry_after


def _wait(state: RetryCallState) -> float:
    """Exponential backoff with jitter (0.2 s doubling to 5 s), at least the Retry-After."""
    base = min(5.0, 0.2 * 2 ** (state.attempt_number - 1)) * random.uniform(0.5, 1.0)
    exc = state.outcome.exception() if state.outcome else None
    return max(base, exc.retry_after if isinstance(exc, _Again) else 0.0)


async def book(
    c: httpx.AsyncClient, gateways: list[str], key: str, b: Booking, p: Progress, deadline_s: float
) -> None:
    body = {
        "source": {
            "payment_rail": "provider_wallet",
            "currency": "USDC",
            "amount": str(b.amount),
            "provider_wallet_id": b.source,
        },
        "destination": {
            "payment_rail": "provider_wallet",
            "currency": "USDC",
            "provider_wallet_id": b.destination,
        },
        "idempotency_key": b.key,
    }
    headers = {"Authorization": f"Bearer {key}", "Idempotency-Key": b.key}
    first = random.randrange(len(gateways))
    try:
        async for attempt in AsyncRetrying(
            retry=retry_if_exception_type(_Again),
            wait=_wait,
            stop=stop_after_delay(deadline_s),
            reraise=True,
        ):
            with attempt:
                b.attempts = attempt.retry_state.attempt_number
                gw = gateways[(first + b.attempts - 1) % len(gateways)]
                sent = time.monotonic()
                try:
                    r = await c.post(gw + "/v1/transfers", json=body, headers=headers, timeout=CALL_TIMEOUT_S)
                except httpx.TimeoutException as e:
                    p.answers["timeout"] += 1
                    p.attempts.append((sent, time.monotonic(), "timeout"))
                    b.last_answer = "timeout"
                    raise _Again("timeout") from e
                except httpx.TransportError as e:
                    p.answers["connection_error"] += 1
                    p.attempts.append((sent, time.monotonic(), "connection_error"))
                    b.last_answer = "connection_error"
                    raise _Again(type(e).__name__) from e
                p.answers[str(r.status_code)] += 1
                p.attempts.append((sent, time.monotonic(), str(r.status_code)))
                b.last_answer = f"{r.status_code} {_code(r)}"
                if r.status_code in (409, 429) or r.status_code >= 500:
                    try:
                        retry_after = float(r.headers.get("Retry-After", "0"))
                    except ValueError:
                        retry_after = 0.0
                    raise _Again(f"{r.status_code} {r.text[:120]}", min(retry_after, 10.0))
                b.status = r.status_code
                data = r.json()
                if 200 <= r.status_code < 300:
                    b.transfer_id = data["data"]["transfer_id"]
                else:
                    b.error = json.dumps(data.get("error", {}))[:300]
    except _Again as e:
        b.error = f"undecided after {b.attempts} attempts; last: {e}"
    b.decided_after_s = time.monotonic() - b.started
    p.decided += 1


def _code(r: httpx.Response) -> str:
    try:
        err = r.json().get("error") or {}
        return f"{err.get('code', '')} {(err.get('details') or {}).get('reason', '')}".strip()
    except ValueError:
        return ""


async def run_clients(
    gateways: list[str],
    key: str,
    wallets: list[str],
    p: Progress,
    clients: int,
    deadline_s: float,
    run_id: str,
) -> None:
    limits = httpx.Limits(max_connections=clients * 2, max_keepalive_connections=clients * 2)
    async with httpx.AsyncClient(limits=limits) as c:

        async def client() -> None:
            while p.issued < p.total:
                if p.gate is not None and p.issued >= p.gate:
                    await asyncio.sleep(0.05)
                    continue
                i = p.issued
                p.issued += 1
                src, dst = random.sample(wallets, 2)
                amount = Decimal(random.randint(1, 500)) / 100
                b = Booking(f"chaos-{run_id}-{i}", src, dst, amount, time.monotonic())
                p.bookings.append(b)
                await book(c, gateways, key, b, p, deadline_s)

        await asyncio.gather(*(client() for _ in range(clients)))

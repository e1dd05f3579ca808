"""Delivery: claim due deliveries, send one attempt each, record the outcome.

State lives in PostgreSQL. A worker claims due rows with ``FOR UPDATE SKIP LOCKED`` and a
lease, taking the attempt number in that transaction; it then posts (no transaction held)
and records the outcome in a second transaction with :func:`_send`. A restart loses nothing:
what was due is still due, and a lease left by a killed worker expires and is taken over.

Inside one attempt, connection failures (the request never left) are retried with tenacity;
anything after the request was sent is the attempt's outcome. Between attempts the schedule
is ``settings.retry_schedule`` with jitter; after the last attempt the delivery is dead.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from common.db import transaction
from common.settings import Settings
from webhooks import repository as repo
from webhooks.signing import SecretBox, signature_header
from webhooks.targets import Target, TargetError, vet

log = logging.getLogger(__name__)

PER_ENDPOINT_IN_FLIGHT = 4  # leased deliveries per endpoint, across all workers
MAX_IN_FLIGHT = 64
CONNECT_TRIES = 3


@dataclass(frozen=True, slots=True)
class Outcome:
    status_code: int | None
    error: str | None
    latency_ms: int

    @property
    def ok(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


@dataclass(frozen=True, slots=True)
class Policy:
    schedule: tuple[float, ...]
    jitter: float
    timeout_s: float
    disable_after_s: float
    allow_private: bool

    @classmethod
    def from_settings(cls, s: Settings) -> Policy:
        return cls(
            tuple(s.retry_schedule),
            s.webhooks_jitter,
            s.webhooks_timeout_s,
            float(s.webhooks_disable_after_s),
            s.webhooks_allow_private_targets,
        )

    @property
    def max_attempts(self) -> int:
        return len(self.schedule) + 1

    @property
    def lease_s(self) -> float:
        return self.timeout_s + 10.0

    def retry_in(self, attempt: int, max_attempts: int) -> float | None:
        """Seconds until the attempt after ``attempt`` (1-based), None when none is left."""
        if attempt >= max_attempts or not self.schedule:
            return None
        base = self.schedule[min(attempt, len(self.schedule)) - 1]
        return max(0.0, base * (1 + random.uniform(-self.jitter, self.jitter)))  # retry jitter  # nosec B311


class Sender:
    """Posts a signed body to a vetted address; the only network code of the service."""

    def __init__(self, policy: Policy, client: httpx.AsyncClient | None = None) -> None:
        self.policy = policy
        # No keep-alive: connections are made to an IP with the name in SNI, and a pooled TLS
        # connection must never be reused for another name served by the same address.
        self.client = client or httpx.AsyncClient(
            timeout=policy.timeout_s,
            follow_redirects=False,
            trust_env=False,
            limits=httpx.Limits(max_connections=MAX_IN_FLIGHT, max_keepalive_connections=0),
        )

    async def close(self) -> None:
        await self.client.aclose()

    async def post(self, url: str, body: bytes, headers: dict[str, str]) -> Outcome:
        started = time.monotonic()
        status: int | None = None
        error: str | None = None
        try:
            async with asyncio.timeout(self.policy.timeout_s):
                target = await vet(url, self.policy.allow_private)  # again, against rebinding
                status = await self._post_retrying(target, body, headers)
        except TargetError as exc:
            error = exc.reason
        except TimeoutError:
            error = f"timeout after {self.policy.timeout_s:g}s"
        except httpx.HTTPError as exc:
            error = f"{type(exc).__name__}: {exc}"[:500]
        except Exception as exc:  # an outcome, never a crash: the attempt must be recorded
            error = f"{type(exc).__name__}"
        if status is not None and not 200 <= status < 300:
            error = f"http_{status}"
        return Outcome(status, error, int((time.monotonic() - started) * 1000))

    async def _post_retrying(self, target: Target, body: bytes, headers: dict[str, str]) -> int:
        # Only failures to connect are retried: the receiver has not seen the request.
        retrying = AsyncRetrying(
            stop=stop_after_attempt(CONNECT_TRIES),
            wait=wait_exponential(multiplier=0.2, max=2.0),
            retry=retry_if_exception_type((httpx.ConnectError, httpx.ConnectTimeout)),
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                return await self._post_any(target, body, headers)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _post_any(self, target: Target, body: bytes, headers: dict[str, str]) -> int:
        for i, address in enumerate(target.addresses):
            try:
                return await self._post_to(target, address, body, headers)
            except (httpx.ConnectError, httpx.ConnectTimeout):
                if i == len(target.addresses) - 1:
                    raise
        raise httpx.ConnectError("no address to connect to")

    async def _post_to(self, target: Target, address: str, body: bytes, headers: dict[str, str]) -> int:
        url = httpx.URL(target.url).copy_with(host=address)
        extensions = {"sni_hostname": target.host} if target.scheme == "https" else {}
        all_headers = {
            **headers,
            "Host": target.host_header,
            "Content-Type": "application/json",
            "User-Agent": "Sluice-Webhooks/1.0",
        }
        async with self.client.stream(
            "POST", url, content=body, headers=all_headers, extensions=extensions
        ) as resp:
            return resp.status_code  # the body is never read


def _secrets(box: SecretBox, row: Any) -> list[str]:
    secrets = [box.open_secret(bytes(row.secret_enc), row.webhook_id)]
    if row.previous_secret_enc is not None and row.previous_valid:
        secrets.append(box.open_secret(bytes(row.previous_secret_enc), row.webhook_id))
    return secrets


async def _send(session: AsyncSession, sender: Sender, box: SecretBox, row: Any) -> Outcome | None:
    """One attempt of a claimed delivery: sign the stored bytes, post, record the outcome.

    ``row`` comes from :func:`repository.claim`. A delivery that is no longer pending (it
    succeeded or was dead-lettered meanwhile) is skipped. The caller commits.
    """
    if row.status != "pending":
        return None
    body = bytes(row.body)
    timestamp = int(time.time())
    try:
        secrets = _secrets(box, row)
    except ValueError:  # a changed key: record a failed attempt rather than loop on the lease
        outcome = Outcome(None, "signing_secret_unreadable", 0)
    else:
        headers = {
            "x-service-webhook-id": row.event_id,
            "x-service-timestamp": str(timestamp),
            "x-service-signature": signature_header(secrets, row.event_id, timestamp, body),
        }
        outcome = await sender.post(row.url, body, headers)
    await repo.finish_attempt(
        session, row.id, row.attempts, outcome.status_code, outcome.latency_ms, outcome.error
    )
    if outcome.ok:
        assert outcome.status_code is not None
        await repo.delivery_succeeded(session, row.id, row.attempts, outcome.status_code)
        await repo.mark_success(session, row.webhook_id)
        return outcome
    retry_in = sender.policy.retry_in(row.attempts, row.max_attempts)
    await repo.delivery_failed(
        session, row.id, row.attempts, outcome.status_code, outcome.error or "failed", retry_in
    )
    if retry_in is None:
        log.warning("delivery %s dead after %d attempts: %s", row.id, row.attempts, outcome.error)
    if await repo.mark_failure(session, row.webhook_id, sender.policy.disable_after_s):
        log.warning("endpoint %s disabled: failing without success", row.webhook_id)
    return outcome


async def claim_due(session: AsyncSession, policy: Policy, worker: str, free: int) -> Sequence[Any]:
    """Claim up to ``free`` due deliveries without exceeding any endpoint's share."""
    candidates = await repo.due_candidates(session, PER_ENDPOINT_IN_FLIGHT, scan=free)
    if not candidates:
        return []
    return await repo.claim(session, [c.id for c in candidates], policy.lease_s, worker)


class DeliveryWorker:
    """Polls for due deliveries (and wakes on fan-out); sends each as its own task."""

    def __init__(
        self, sm: async_sessionmaker[AsyncSession], sender: Sender, box: SecretBox, worker: str, poll_s: float
    ) -> None:
        self.sm = sm
        self.sender = sender
        self.box = box
        self.worker = worker
        self.poll_s = poll_s
        self.tasks: set[asyncio.Task[None]] = set()
        self.sent = 0
        self._wake = asyncio.Event()

    def wake(self) -> None:
        self._wake.set()

    async def run(self) -> None:
        while True:
            self._wake.clear()
            free = MAX_IN_FLIGHT - len(self.tasks)
            claimed: Sequence[Any] = []
            if free > 0:
                try:
                    async with transaction(self.sm) as session:
                        claimed = await claim_due(session, self.sender.policy, self.worker, free)
                except asyncio.CancelledError:
                    raise
                except Exception:  # the store may be briefly away; poll again
                    log.warning("claiming deliveries failed", exc_info=True)
            for row in claimed:
                task = asyncio.create_task(self._deliver(row), name=f"deliver-{row.id}")
                self.tasks.add(task)
            if claimed and len(claimed) >= free:
                await asyncio.sleep(0)
                continue
            try:
                await asyncio.wait_for(self._wake.wait(), self.poll_s)
            except TimeoutError:
                pass

    async def _deliver(self, row: Any) -> None:
        """The thin task: one transaction around :func:`_send`."""
        try:
            async with transaction(self.sm) as session:
                await _send(session, self.sender, self.box, row)
            self.sent += 1
        except asyncio.CancelledError:
            raise
        except Exception:  # the lease expires and the delivery is taken over
            log.exception("delivery %s attempt %d failed to record", row.id, row.attempts)
        finally:
            self.tasks.discard(asyncio.current_task())  # type: ignore[arg-type]
            self._wake.set()

    async def stop(self) -> None:
        for t in list(self.tasks):
            t.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)

"""Delivery: claim due deliveries per endpoint, send them concurrently, record outcomes in batches.

State lives in PostgreSQL. Each turn of the worker is one transaction that records the
outcomes of every attempt finished since the last turn (the attempts written and the
deliveries moved in one set-based statement for the whole batch) and claims what is due (a
few due endpoints, SKIP LOCKED, each up to its in-flight limit), taking the attempt numbers
there. Each claimed delivery is posted by its own task, with no transaction held. A restart
loses nothing: what was due is still due, and a lease left by a killed worker expires and is
taken over (that attempt written as interrupted).

Fairness: an endpoint has at most ``Policy.per_endpoint`` deliveries in flight across all
workers (1 while it is failing), and its retries wait in the table (``next_attempt_at``),
not in a worker; so a slow or dead endpoint holds at most its own few slots.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from common.consume import wait_out_transient
from common.db import transaction
from common.health import Readiness
from webhooks import metrics, service
from webhooks import repository as repo
from webhooks.repository import Claimed, Finished
from webhooks.sender import Outcome, Policy, Sender
from webhooks.signing import SecretBox, signature_header

__all__ = ["DeliveryWorker", "Outcome", "Policy", "Sender", "_send", "attempt", "claim_due", "record"]

log = logging.getLogger(__name__)

CLAIM_ENDPOINTS = 64  # due endpoints looked at per claim


def _secrets(box: SecretBox, row: Claimed) -> list[str]:
    """The current secret and every one rotated out less than the grace period ago: the
    request carries one ``v1,`` signature per secret, so each still verifies."""
    now = datetime.now(UTC)
    secrets = [box.open_secret(bytes(row.secret_enc), row.webhook_id)]
    for sealed, until in zip(row.retired_secrets_enc or (), row.retired_until or (), strict=True):
        if until > now:
            secrets.append(box.open_secret(bytes(sealed), row.webhook_id))
    return secrets


async def attempt(sender: Sender, box: SecretBox, row: Claimed) -> Finished:
    """Sign the stored bytes with a fresh timestamp, post once, and say what happened."""
    body = bytes(row.body)
    started = datetime.now(UTC)
    timestamp = int(started.timestamp())
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
        outcome = await sender.post(row.url, body, headers, endpoint=row.webhook_id)
    retry = None if outcome.ok else sender.policy.retry_in(row.attempts, row.max_attempts)
    if not outcome.ok and retry is None:
        log.warning("delivery %s dead after %d attempts: %s", row.id, row.attempts, outcome.error)
    return Finished(
        row.id,
        row.attempts,
        row.webhook_id,
        row.leased_by or "unknown",
        started,
        outcome.status_code,
        outcome.latency_ms,
        outcome.error or (None if outcome.ok else "failed"),
        outcome.ok,
        retry,
    )


async def record(session: AsyncSession, policy: Policy, done: list[Finished]) -> None:
    """Write a batch of outcomes; tell the tenant about any endpoint this disabled."""
    _moved, disabled = await repo.record_outcomes(session, done, policy.disable_after_s)
    for endpoint in disabled:
        log.warning("endpoint %s disabled: failing without success", endpoint.id)
    if disabled:
        await service.announce_disabled(session, disabled, policy.max_attempts)


async def _send(session: AsyncSession, sender: Sender, box: SecretBox, row: Claimed) -> Outcome | None:
    """One attempt of a claimed delivery, recorded in ``session`` (the caller commits).

    A delivery that is no longer pending (it succeeded or was dead-lettered meanwhile) is
    skipped. The worker does the same in batches; tests call this directly.
    """
    if row.status != "pending":
        return None
    done = await attempt(sender, box, row)
    await record(session, sender.policy, [done])
    return Outcome(done.status_code, done.error if not done.ok else None, done.latency_ms)


async def claim_due(session: AsyncSession, policy: Policy, worker: str, free: int) -> list[Claimed]:
    """Claim up to ``free`` due deliveries, spread over the longest-waiting due endpoints,
    none beyond its in-flight limit (1 while the endpoint is failing)."""
    return (await _claim(session, policy, worker, free))[0]


async def _claim(session: AsyncSession, policy: Policy, worker: str, free: int) -> tuple[list[Claimed], bool]:
    """``claim_due``, and whether more may be due right now: as many due endpoints were
    found as were looked at, or ``free`` ran out.

    The endpoints looked at are locked until the turn commits, so a worker locks no more than
    it can fill (twice ``free`` over the per-endpoint limit, at least 4): locking every due
    endpoint left other processes none to claim from, and two processes took turns instead of
    sending at once (measured with 40 endpoints at 32 in flight each)."""
    limit = min(CLAIM_ENDPOINTS, free, max(4, -(-2 * free // policy.per_endpoint)))
    due = await repo.due_endpoints(session, limit, policy.per_endpoint)
    caps: dict[str, int] = {}
    left = free
    for e in due:
        cap = min(max(0, (1 if e.failing else policy.per_endpoint) - e.leased), left)
        if cap:
            caps[e.id] = cap
            left -= cap
    claimed = await repo.lease_due(session, caps, policy.lease_s, worker)
    await repo.settle_endpoints(session, [e.id for e in due], policy.per_endpoint)
    return claimed, len(due) == limit or len(claimed) == free


@dataclass(eq=False)
class DeliveryWorker:
    """One loop claims and records: each turn is one transaction that writes the outcomes of
    every attempt finished since the last turn and claims what is due (group commit: while a
    turn runs, finished attempts collect for the next, and the next waits up to ``linger_s``
    for those still in flight). Each claimed delivery is sent as its own task, which wakes
    the loop when done; fan-out wakes it too, else it polls."""

    sessions: async_sessionmaker[AsyncSession]
    sender: Sender
    box: SecretBox
    worker: str
    poll_s: float
    linger_s: float = 0.005
    tasks: set[asyncio.Task[None]] = field(default_factory=set, init=False)
    finished: list[Finished] = field(default_factory=list, init=False)
    sent: int = field(default=0, init=False)
    turns: int = field(default=0, init=False)
    _wake: asyncio.Event = field(default_factory=asyncio.Event, init=False)

    @property
    def policy(self) -> Policy:
        return self.sender.policy

    def wake(self) -> None:
        self._wake.set()

    async def turn(self) -> bool:
        """Record what finished and claim what is due, in one transaction; whether more may be
        due now."""
        batch, self.finished = self.finished, []
        free = self.policy.max_in_flight - len(self.tasks)
        started = time.perf_counter()
        try:
            async with transaction(self.sessions) as session:
                if batch:
                    await record(session, self.policy, batch)
                claimed, more = (
                    await _claim(session, self.policy, self.worker, free) if free > 0 else ([], False)
                )
        except BaseException:
            self.finished = batch + self.finished  # recorded next turn (or the leases expire)
            raise
        self.turns += 1
        metrics.TURN.observe(time.perf_counter() - started)
        if batch:
            metrics.observe_batch(batch)
        for row in claimed:
            task = asyncio.create_task(self._deliver(row), name=f"deliver-{row.id}")
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
        metrics.IN_FLIGHT.set(len(self.tasks))
        return more

    async def run(self, readiness: Readiness | None = None) -> None:
        """Turn after turn. A store that is away is waited out (the service reports not ready
        meanwhile); anything else crashes the task to its Supervisor, which restarts it with
        backoff. An outcome lost with a failed turn is sent again when its lease expires."""
        log.info("delivery worker %s started: polling every %gs", self.worker, self.poll_s)
        while True:
            self._wake.clear()
            more = await wait_out_transient(self.turn, readiness=readiness, component="task delivery-worker")
            if more:
                await asyncio.sleep(0)
                continue
            if not self.finished:
                with contextlib.suppress(TimeoutError):  # woken early, or the poll interval passed
                    await asyncio.wait_for(self._wake.wait(), self.poll_s)
            if self.finished:
                await self._linger()

    async def _linger(self) -> None:
        """Group commit: something finished; wait up to ``linger_s`` for the rest in flight,
        so that one turn records them and claims their slots again together. Without it a
        turn ran for the first one or two of an endpoint's batch and the next for the rest:
        half the turns, each as dear as a full one, carried one or two outcomes."""
        deadline = time.monotonic() + self.linger_s
        while self.tasks and (left := deadline - time.monotonic()) > 0:
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), left)

    async def _deliver(self, row: Claimed) -> None:
        """The thin task: one attempt, its outcome left for the next turn to record."""
        try:
            done = await attempt(self.sender, self.box, row)
            self.finished.append(done)  # after the await: turn() swaps the list meanwhile
            self.sent += 1
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - the lease expires and the delivery is taken over
            log.exception("delivery %s attempt %d failed", row.id, row.attempts)
        finally:
            self._wake.set()

    async def stop(self) -> None:
        """Cancel what is in flight and record what already finished (not sent again)."""
        for t in list(self.tasks):
            t.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        batch, self.finished = self.finished, []
        if not batch:
            return
        try:
            async with transaction(self.sessions) as session:
                await record(session, self.policy, batch)
        except Exception:  # noqa: BLE001 - shutting down; the leases expire
            log.warning("recording the last %d outcomes failed", len(batch), exc_info=True)

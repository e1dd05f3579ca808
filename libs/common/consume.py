"""The consumer runtime every Kafka consumer of the suite uses (docs/failure-model.md, "The
consumer runtime").

A handler receives a fetched batch of records. The runtime:

1. decodes each record; one that cannot be decoded is **poison**: dead-lettered at once; so
   is one that ``admit`` refuses (a command whose authority does not verify, common.authority):
   it never reaches the handler, and the dead letter carries the refusal;
2. runs the whole batch in one go (one transaction: the group commit that makes throughput);
3. retries a **transient** failure (a store or the broker unreachable, see
   :func:`common.faults.is_transient`) with exponential backoff (tenacity), for as long as it
   takes, while the service reports not ready; nothing is committed meanwhile;
4. on a **deterministic** failure runs each message alone, up to ``attempts`` times (each
   try again waiting out transient faults), and dead-letters a message that still fails,
   with its topic, partition, offset, error and attempt count;
5. returns only when every message is durable or dead-lettered: then, and only then, the
   subscriber (:func:`common.broker.subscribe`) commits the offsets (at most every 100 ms).
   If the handler raises or is cancelled (shutdown), nothing is committed and the batch is
   delivered again.

The wrapped handlers must be idempotent (the inbox makes them so): a batch may run again
after a crash, and a message that failed inside a batch runs again alone.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

import msgspec
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_never, wait_exponential_jitter

from common.failpoints import failpoint
from common.faults import is_transient
from common.health import Readiness
from common.metrics import BATCH_SIZE, BATCH_SPLITS, CONSUMED, FAILED, TRANSIENT_RETRIES
from common.tracing import MessageSpans

log = logging.getLogger(__name__)

M = TypeVar("M")
T = TypeVar("T")

POISON = (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError)


class Record(Protocol):
    """What the runtime reads of a Kafka record (aiokafka's ``ConsumerRecord``)."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: Sequence[tuple[str, bytes]]


@dataclass(frozen=True, slots=True)
class Failure:
    """A message given up on: what the dead-letter record and the caller's answer need."""

    record: Record
    message: Any  # the decoded message, None when it could not be decoded
    error: BaseException
    attempts: int


async def wait_out_transient(
    fn: Callable[[], Awaitable[T]],
    *,
    readiness: Readiness | None = None,
    component: str = "",
    max_wait_s: float = 2.0,
) -> T:
    """Run ``fn`` until it succeeds or fails for a reason that is not transient.

    Transient failures are retried forever with jittered exponential backoff up to
    ``max_wait_s`` between tries (short, so work resumes within seconds of a store coming
    back); while retrying, ``component`` is reported not ready. ``fn`` must be idempotent.
    """

    def degraded(state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        if readiness is not None:
            readiness.fail(component, f"retrying a transient fault: {type(exc).__name__}")
        TRANSIENT_RETRIES.labels(component).inc()
        if state.attempt_number in (1, 10) or state.attempt_number % 50 == 0:
            log.warning(
                "%s: transient fault, retrying (attempt %d): %r", component, state.attempt_number, exc
            )

    try:
        async for attempt in AsyncRetrying(
            retry=retry_if_exception(is_transient),
            wait=wait_exponential_jitter(multiplier=0.05, max=max_wait_s, jitter=0.05),
            stop=stop_never,
            before_sleep=degraded,
            reraise=True,
        ):
            with attempt:
                result = await fn()
    finally:
        if readiness is not None:
            readiness.ok(component)
    return result


class BatchProcessor(Generic[M]):
    def __init__(
        self,
        *,
        name: str,
        decode: Callable[[bytes], M],
        handle_batch: Callable[[Sequence[M]], Awaitable[None]],
        dead_letter: Callable[[Failure], Awaitable[None]],
        readiness: Readiness | None = None,
        handle_one: Callable[[M], Awaitable[None]] | None = None,
        admit: Callable[[M], None] | None = None,
        attempts: int = 3,
        backoff_s: float = 0.05,
    ) -> None:
        self.name = name
        self.decode = decode
        self.handle_batch = handle_batch
        self.handle_one = handle_one or (lambda m: handle_batch([m]))
        self.dead_letter = dead_letter
        self.admit = admit
        self.refused = 0
        self.readiness = readiness
        self.attempts = max(1, attempts)
        self.backoff_s = backoff_s
        self.consumed = 0
        self.dead_lettered = 0
        self.splits = 0  # batches run again one by one after a deterministic failure

    async def __call__(self, records: Sequence[Record]) -> None:
        spans = MessageSpans(self.name, records)  # each record's work in its request's trace
        try:
            await self._batch(records)
        finally:
            spans.end()

    async def _batch(self, records: Sequence[Record]) -> None:
        BATCH_SIZE.labels(self.name).observe(len(records))
        good: list[tuple[Record, M]] = []
        for rec in records:
            try:
                msg = self.decode(rec.value or b"")
            except POISON as exc:
                FAILED.labels(self.name, rec.topic).inc()
                await self._give_up(Failure(rec, None, exc, 1))
                continue
            if self.admit is not None:
                try:
                    self.admit(msg)
                except Exception as exc:  # noqa: BLE001 - refused: never handled, dead-lettered
                    self.refused += 1
                    log.error(
                        "%s: refused %s[%d]@%d: %s", self.name, rec.topic, rec.partition, rec.offset, exc
                    )
                    await self._give_up(Failure(rec, msg, exc, 1))
                    continue
            good.append((rec, msg))
        if good:
            try:
                await self._transient(lambda: self.handle_batch([m for _, m in good]))
            except Exception:  # noqa: BLE001 - deterministic: isolate the message that fails
                log.warning("%s: batch of %d failed; running each alone", self.name, len(good), exc_info=True)
                BATCH_SPLITS.labels(self.name).inc()
                self.splits += 1
                for rec, msg in good:
                    await self._one(rec, msg)
        self.consumed += len(records)
        for topic, n in Counter(rec.topic for rec in records).items():
            CONSUMED.labels(self.name, topic).inc(n)

    async def _one(self, rec: Record, msg: M) -> None:
        last: BaseException | None = None
        for attempt in range(1, self.attempts + 1):
            try:
                await self._transient(lambda: self.handle_one(msg))
                return
            except Exception as exc:  # noqa: BLE001 - counted, then dead-lettered
                last = exc
                FAILED.labels(self.name, rec.topic).inc()
                log.warning("%s: message failed (attempt %d/%d): %r", self.name, attempt, self.attempts, exc)
                await asyncio.sleep(self.backoff_s * attempt)
        assert last is not None
        await self._give_up(Failure(rec, msg, last, self.attempts))

    async def _give_up(self, failure: Failure) -> None:
        # Publishing the dead letter is itself edge I/O: wait out a broker outage.
        await wait_out_transient(
            lambda: self.dead_letter(failure), readiness=self.readiness, component=f"consumer {self.name}"
        )
        self.dead_lettered += 1

    def _transient(self, fn: Callable[[], Awaitable[None]]) -> Awaitable[None]:
        async def attempt() -> None:
            await failpoint(f"consume.{self.name}")  # tests inject faults into any consumer
            await fn()

        return wait_out_transient(attempt, readiness=self.readiness, component=f"consumer {self.name}")

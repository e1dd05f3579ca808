"""Batch consumption with group commit, per-message fallback, bounded retry and a DLQ.

A consumer handler receives a batch of raw messages. It first tries to process the whole
batch in one go (one transaction: the group commit that makes throughput). If that fails,
each message is processed alone, up to ``attempts`` times with a short backoff; a message
that still fails, or that cannot be decoded, goes to the dead-letter topic. The batch is
acknowledged only when every message is durable or dead-lettered (``AckPolicy.ACK``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

import msgspec

log = logging.getLogger(__name__)

M = TypeVar("M")


class BatchProcessor(Generic[M]):
    def __init__(
        self,
        *,
        decode: Callable[[bytes], M],
        handle_batch: Callable[[Sequence[M]], Awaitable[None]],
        handle_one: Callable[[M], Awaitable[None]],
        dead_letter: Callable[[bytes, BaseException, int, M | None], Awaitable[None]],
        attempts: int = 3,
        backoff_s: float = 0.05,
    ) -> None:
        self.decode = decode
        self.handle_batch = handle_batch
        self.handle_one = handle_one
        self.dead_letter = dead_letter
        self.attempts = max(1, attempts)
        self.backoff_s = backoff_s

    async def __call__(self, raws: Sequence[bytes]) -> None:
        decoded: list[tuple[bytes, M]] = []
        for raw in raws:
            try:
                decoded.append((raw, self.decode(raw)))
            except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError) as exc:
                await self.dead_letter(raw, exc, 1, None)
        if not decoded:
            return
        try:
            await self.handle_batch([m for _, m in decoded])
            return
        except Exception:  # noqa: BLE001 - fall back to one by one; each failure is kept
            log.warning("batch of %d failed; retrying one by one", len(decoded), exc_info=True)
        for raw, msg in decoded:
            await self._one(raw, msg)

    async def _one(self, raw: bytes, msg: M) -> None:
        last: BaseException | None = None
        for attempt in range(1, self.attempts + 1):
            try:
                await self.handle_one(msg)
                return
            except Exception as exc:  # noqa: BLE001
                last = exc
                log.warning("message failed (attempt %d/%d): %r", attempt, self.attempts, exc)
                await asyncio.sleep(self.backoff_s * attempt)
        assert last is not None
        await self.dead_letter(raw, last, self.attempts, msg)

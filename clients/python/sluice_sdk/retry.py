"""When to try again and how long to wait: bounded retries with full jitter that honour
``Retry-After``, and the client-side adaptive throttle of the SRE book (ch. 21).

The TypeScript SDK (``clients/typescript/src/retry.ts``) implements the same rules with the
same defaults; change both together.
"""

from __future__ import annotations

import random
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from sluice_sdk.errors import ConnectionFailed, SluiceError, Throttled

# Answers worth another attempt with the same idempotency key: shed or timed out (503), rate
# limited (429), an internal error (500), and a load balancer's bad gateway or gateway timeout
# (502, 504). Every operation the SDK sends is safe to repeat: reads, and writes that carry
# their idempotency key. Everything else is the request's own answer.
RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})


@dataclass(frozen=True)
class RetryPolicy:
    """``max_attempts`` counts every attempt, the first included (1 = never retry).

    The wait before attempt n+1 is ``uniform(0, min(cap_s, base_s * 2**(n-1)))`` ("full
    jitter"), added to ``Retry-After`` when the answer carries one, so no retry comes before
    the gateway asked and a fleet told "1 s" does not return in step. An answer asking more
    than ``max_retry_after_s`` is not waited for: the error is raised.
    """

    max_attempts: int = 6
    base_s: float = 0.25
    cap_s: float = 8.0
    max_retry_after_s: float = 60.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1 or self.base_s < 0 or self.cap_s < 0:
            raise ValueError("max_attempts >= 1, base_s >= 0 and cap_s >= 0")

    def delay_s(self, failure: SluiceError, attempt: int, rng: random.Random) -> float | None:
        """Seconds to wait before the next attempt, or None to raise ``failure`` now."""
        if attempt >= self.max_attempts or not retryable(failure):
            return None
        if failure.retry_after is not None and failure.retry_after > self.max_retry_after_s:
            return None
        jitter = rng.uniform(0.0, min(self.cap_s, self.base_s * 2 ** (attempt - 1)))
        return (failure.retry_after or 0.0) + jitter


def retryable(failure: SluiceError) -> bool:
    if isinstance(failure, ConnectionFailed | Throttled):
        return True
    return failure.status in RETRYABLE_STATUS


def rejected(failure: SluiceError | None) -> bool:
    """Whether an answer counts as refused for the throttle: shed (503) or rate limited (429).
    A request that got no answer (:class:`ConnectionFailed`) is neither accepted nor refused:
    the gateway said nothing about its load, so the throttle does not count it at all (else an
    outage of the network would leave the client throttling itself once the network is back)."""
    if failure is None or isinstance(failure, ConnectionFailed):
        return False
    return failure.status in (429, 503)


@dataclass
class Stats:
    """What one client has done (read it in tests and metrics)."""

    attempts: int = 0
    retries: int = 0
    refused: int = 0  # 429/503 answers
    unreached: int = 0  # attempts that got no answer (ConnectionFailed)
    throttled: int = 0  # attempts this client refused itself
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, name: str) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + 1)


class AdaptiveThrottle:
    """Client-side throttling (Beyer et al., *Site Reliability Engineering*, ch. 21): over the
    last ``window_s`` seconds this client made ``requests`` attempts of which the gateway
    accepted ``accepts``; a new attempt is refused locally with probability
    ``max(0, (requests - k * accepts) / (requests + 1))``. While the gateway accepts, that is 0;
    when it sheds most requests, clients stop sending most of theirs, together. A refused attempt
    counts as a request, so the probability stays up until accepts come back.
    ``k`` = 2 (the book's value); ``k`` = 0 is not allowed, a huge ``k`` turns it off.
    The formula is meant for many requests (one refusal of a new client's first request gives
    0.5): with fewer than ``min_requests`` in the window it admits everything, as Envoy's
    admission control does below its request-rate threshold.
    """

    def __init__(
        self,
        k: float = 2.0,
        window_s: float = 120.0,
        min_requests: int = 10,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if k <= 0:
            raise ValueError("k > 0")
        self.k = k
        self.window_s = window_s
        self.min_requests = min_requests
        self._clock = clock
        self._requests: deque[float] = deque()
        self._accepts: deque[float] = deque()
        self._lock = threading.Lock()

    def _prune(self, now: float) -> None:
        for q in (self._requests, self._accepts):
            while q and q[0] <= now - self.window_s:
                q.popleft()

    def probability(self) -> float:
        with self._lock:
            self._prune(self._clock())
            requests, accepts = len(self._requests), len(self._accepts)
        if requests < self.min_requests:
            return 0.0
        return max(0.0, (requests - self.k * accepts) / (requests + 1))

    def admit(self, rng: random.Random) -> bool:
        """Count an attempt; False when the throttle refuses it (send nothing then)."""
        p = self.probability()
        with self._lock:
            self._requests.append(self._clock())
        return rng.random() >= p

    def record(self, accepted: bool) -> None:
        if accepted:
            with self._lock:
                self._accepts.append(self._clock())

    def unanswered(self) -> None:
        """The attempt just admitted got no answer: it is taken out of the window again."""
        with self._lock:
            if self._requests:
                self._requests.pop()


@dataclass
class Attempts:
    """The bookkeeping one logical operation shares between the sync and async clients."""

    policy: RetryPolicy
    throttle: AdaptiveThrottle | None  # None: the throttle is switched off
    stats: Stats
    rng: random.Random
    on_retry: Callable[[SluiceError, int, float], None] | None = None
    attempt: int = field(default=0)

    def start(self) -> None:
        """Begin an attempt; raises :class:`Throttled` when the throttle refuses it."""
        self.attempt += 1
        admitted = self.throttle is None or self.throttle.admit(self.rng)
        self.stats.add("attempts")
        if not admitted:
            self.stats.add("throttled")
            raise Throttled("refused by the client's adaptive throttle (the gateway is shedding)")

    def finish(self, failure: SluiceError | None) -> None:
        """Record the answer of an attempt that was sent (or that it got none)."""
        if isinstance(failure, ConnectionFailed):
            self.stats.add("unreached")
            if self.throttle is not None:
                self.throttle.unanswered()
            return
        refused = rejected(failure)
        if self.throttle is not None:
            self.throttle.record(accepted=not refused)
        if refused:
            self.stats.add("refused")

    def wait_s(self, failure: SluiceError) -> float | None:
        """Seconds before the next attempt, or None when ``failure`` is final."""
        delay = self.policy.delay_s(failure, self.attempt, self.rng)
        if delay is not None:
            self.stats.add("retries")
            if self.on_retry is not None:
                self.on_retry(failure, self.attempt, delay)
        return delay

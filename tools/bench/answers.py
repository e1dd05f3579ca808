"""How every bench counts one offered request (docs/performance/index.md, yardsticks 3 and 4): pure.

Every 503 the gateway sends names its ``details.reason``. Only ``overloaded`` (the door) is a
refusal for overload: nothing was taken, and it is *shed*. Any other 5xx (``upstream_timeout``,
``store_unavailable``, ``in_flight``, or a 5xx with no reason) is a failure of admitted work:
it counts in the admitted latency (as its time) and never as goodput. A request with no answer
(status ``0``) or still running when the driver stopped waiting (``-1``) is a failure at every
load. A 4xx is admitted work answered with a refusal (e.g. 402 insufficient funds).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from common.errors import Unavailable

NO_ANSWER = 0  # the status recorded for a request without an answer
STILL_RUNNING = -1  # the status recorded for a request still running at the end


class Outcome(StrEnum):
    OK = "ok"  # 2xx (or 3xx): the work was done
    SHED = "shed"  # 503 overloaded: refused at the door, nothing taken
    REJECTED = "rejected"  # 4xx: admitted, answered with a refusal
    FAILED = "failed"  # any other 5xx: admitted work that failed
    NO_ANSWER = "no_answer"  # no answer (client timeout, reset, refused connection)
    RUNNING = "running"  # still running when the driver stopped waiting


def reason_of(body: bytes) -> str | None:
    """``error.details.reason`` of an error envelope, or None (not JSON, no reason)."""
    try:
        doc = json.loads(body)
        reason = doc["error"]["details"]["reason"]
    except (ValueError, TypeError, KeyError):
        return None
    return reason if isinstance(reason, str) else None


def outcome(status: int, reason: str | None = None) -> Outcome:
    if status == NO_ANSWER:
        return Outcome.NO_ANSWER
    if status == STILL_RUNNING:
        return Outcome.RUNNING
    if status < 400:
        return Outcome.OK
    if status < 500:
        return Outcome.REJECTED
    if status == 503 and reason == Unavailable.OVERLOADED:
        return Outcome.SHED
    return Outcome.FAILED


def admitted(o: Outcome) -> bool:
    """Whether the door let it in: everything but a shed request (its time counts as admitted)."""
    return o is not Outcome.SHED


def failure(o: Outcome) -> bool:
    """Admitted work that did not get an answer of its own: a 5xx, none, or none yet."""
    return o in (Outcome.FAILED, Outcome.NO_ANSWER, Outcome.RUNNING)


def label(status: int, reason: str | None) -> str:
    """How a failure is printed: ``503 upstream_timeout``, ``500 (no reason)``, ..."""
    return f"{status} {reason or '(no reason)'}"


def quantile_ms(xs: Iterable[float], p: float) -> float:
    """The ``p`` quantile of seconds, in ms (0 with no sample)."""
    ordered = sorted(xs)
    return 1000 * ordered[min(len(ordered) - 1, int(len(ordered) * p))] if ordered else 0.0


@dataclass(frozen=True, slots=True)
class Answer:
    """One offered request: status (0 none, -1 still running), reason of a 5xx, seconds from
    its intended send time to its answer (or to the end, if none)."""

    status: int
    reason: str | None
    s: float


def open_loop(answers: list[Answer], elapsed: float) -> dict[str, float]:
    """An open-loop run's figures: latency percentiles over the 2xx answers only (a fast 503
    must not flatter them), and every other request counted by what became of it."""
    by = Counter(outcome(a.status, a.reason) for a in answers)
    ok = [a.s for a in answers if outcome(a.status, a.reason) is Outcome.OK]
    secs = max(elapsed, 1e-9)
    return {
        "requests": float(len(answers)),
        "ok": float(len(ok)),
        "refused": float(by[Outcome.SHED]),
        "rejected": float(by[Outcome.REJECTED]),
        "failed": float(by[Outcome.FAILED]),
        "no_answer": float(by[Outcome.NO_ANSWER]),
        "unfinished": float(by[Outcome.RUNNING]),
        "errors": float(len(answers) - len(ok)),
        "rps": (len(answers) - by[Outcome.RUNNING] - by[Outcome.NO_ANSWER]) / secs,
        "ok_rps": len(ok) / secs,
        "p50_ms": quantile_ms(ok, 0.50),
        "p99_ms": quantile_ms(ok, 0.99),
        # every admitted request (not shed): a failure at its time, none at its wait so far
        "admitted_p99_ms": quantile_ms((a.s for a in answers if admitted(outcome(a.status, a.reason))), 0.99),
    }


def failed_by_reason(answers: list[Answer]) -> dict[str, int]:
    """The failures of admitted work (5xx other than ``overloaded``), by status and reason."""
    return dict(
        Counter(label(a.status, a.reason) for a in answers if outcome(a.status, a.reason) is Outcome.FAILED)
    )

"""Named failpoints: the one way to inject a fault into a running service (as etcd's gofail
and TiKV's fail-rs do).

A failpoint is a named place in production code, ``await failpoint("ledger.after_commit")``
(or :func:`hit` where no loop awaits). It is inert unless ``SLUICE_FAILPOINTS`` names it:

    SLUICE_FAILPOINTS="ledger.after_commit=kill"            # SIGKILL this process there
    SLUICE_FAILPOINTS="webhooks.send=error;ledger.batch=sleep(2.5)"
    SLUICE_FAILPOINTS="compliance.decide=1*error"           # only the first time it is hit

Actions: ``kill`` (SIGKILL: no cleanup, as a power cut), ``error`` (raise
:class:`FailpointError`: a deterministic failure), ``unavailable`` (raise
:class:`FailpointUnavailable`, a ``ConnectionError``: a transient one, as a store that cannot
be reached), ``sleep(s)`` (block the task that hit it), ``off``. A ``N*`` prefix
fires the action the first N hits only; a ``P%`` prefix fires it on that share of hits,
drawn from a generator :func:`seed` makes repeatable (the deterministic simulation of the
money logic). ``crash`` raises :class:`FailpointCrash`, a ``BaseException`` no handler
catches: the task dies where it stands, its transaction rolled back, as a process killed
there would, without killing the process that runs the simulation. The setting is read
once, at the first hit, from the environment: failpoints are process-wide test scaffolding,
not configuration, so they do not live in :class:`common.settings.Settings`. With the
variable unset a hit costs one dict lookup.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import re
import signal
import time
from dataclasses import dataclass

log = logging.getLogger(__name__)

ENV = "SLUICE_FAILPOINTS"
_SPEC = re.compile(
    r"^(?:(?P<count>\d+)\*|(?P<pct>\d+(?:\.\d+)?)%)?"
    r"(?P<action>kill|crash|error|unavailable|off|sleep\((?P<secs>[0-9.]+)\))$"
)


class FailpointError(RuntimeError):
    """Raised by a failpoint whose action is ``error``."""


class FailpointUnavailable(ConnectionError):
    """Raised by a failpoint whose action is ``unavailable`` (a transient fault)."""


class FailpointCrash(BaseException):  # noqa: N818 - a death, not an error to handle
    """Raised by a failpoint whose action is ``crash``: nothing but the simulation catches it."""


@dataclass
class _Point:
    action: str
    seconds: float = 0.0
    remaining: int | None = None  # None: every hit
    share: float | None = None  # fire on this share of hits (``P%``), drawn from _rng


_points: dict[str, _Point] | None = None
_rng = random.Random(0)  # noqa: S311  # nosec B311 - picks fault points in tests, not secrets


def seed(value: int) -> None:
    """Make the ``P%`` failpoints fire at the same hits again (a replayed simulation seed)."""
    _rng.seed(value)


def parse(spec: str) -> dict[str, _Point]:
    """``name=action;name=action`` -> points. A malformed entry is an error, not ignored."""
    points: dict[str, _Point] = {}
    for part in filter(None, (p.strip() for p in spec.split(";"))):
        name, sep, action = part.partition("=")
        m = _SPEC.match(action.strip())
        if not sep or not name.strip() or m is None:
            raise ValueError(
                f"{ENV}: cannot read {part!r}"
                " (expected name=[N*|P%]kill|crash|error|unavailable|sleep(s)|off)"
            )
        kind = m.group("action").split("(")[0]
        points[name.strip()] = _Point(
            kind,
            float(m.group("secs") or 0),
            int(m.group("count")) if m.group("count") else None,
            float(m.group("pct")) / 100 if m.group("pct") else None,
        )
    return points


def configure(spec: str | None) -> None:
    """Replace the active failpoints (tests of this module; services read the environment)."""
    global _points
    _points = parse(spec or "")


def _armed(name: str) -> _Point | None:
    global _points
    if _points is None:
        _points = parse(os.environ.get(ENV, ""))
    point = _points.get(name)
    if point is None or point.action == "off":
        return None
    if point.remaining is not None:
        if point.remaining <= 0:
            return None
        point.remaining -= 1
    if point.share is not None and _rng.random() >= point.share:
        return None
    log.warning("failpoint %s fired: %s", name, point.action)
    return point


def hit(name: str) -> None:
    """A failpoint in synchronous code (``sleep`` blocks the thread)."""
    point = _armed(name)
    if point is None:
        return
    if point.action == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif point.action == "sleep":
        time.sleep(point.seconds)
    else:
        _raise(point, name)


async def failpoint(name: str) -> None:
    """A failpoint in a coroutine (``sleep`` suspends only the task that hit it)."""
    point = _armed(name)
    if point is None:
        return
    if point.action == "sleep":
        await asyncio.sleep(point.seconds)
    elif point.action == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    else:
        _raise(point, name)


def _raise(point: _Point, name: str) -> None:
    if point.action == "crash":
        raise FailpointCrash(name)
    if point.action == "unavailable":
        raise FailpointUnavailable(f"failpoint {name}")
    raise FailpointError(name)

"""The fault model: which failures are transient (wait and retry) and which are not.

A store or the broker that cannot be reached, or that is shutting down, restarting or out
of connections, is a **transient** fault: the work is retried with backoff for as long as
it takes and never dead-lettered for it. Anything else (a bad message, a bug, a constraint
a command violates every time) is **deterministic**: bounded tries, then the dead-letter
topic. A deadlock or serialization failure is transient too: the same work succeeds alone.
"""

from __future__ import annotations

import asyncio

from aiokafka.errors import KafkaConnectionError, KafkaTimeoutError, NodeNotReadyError, RequestTimedOutError
from redis.exceptions import ClusterDownError, OutOfMemoryError, ReadOnlyError, TryAgainError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from sqlalchemy import exc as sa_exc

# SQLSTATE classes and codes of a database that is unreachable, restarting or overloaded.
_TRANSIENT_SQLSTATE_CLASSES = ("08", "53", "57")  # connection, resources, operator intervention
_TRANSIENT_SQLSTATES = {"40001", "40P01", "55P03"}  # serialization, deadlock, lock not available

_TRANSIENT_TYPES: tuple[type[BaseException], ...] = (
    OSError,  # ConnectionRefusedError, ConnectionResetError, socket errors
    TimeoutError,
    asyncio.TimeoutError,
    sa_exc.TimeoutError,  # pool exhausted
    sa_exc.DisconnectionError,
    RedisConnectionError,
    RedisTimeoutError,
    # Redis answering but unable to serve the write now: a replica promoted or failing over
    # (READONLY, MASTERDOWN, CLUSTERDOWN, TRYAGAIN) or full until keys expire (OOM). The work
    # succeeds once it can write again; dead-lettering it would drop, say, a revocation.
    ReadOnlyError,
    OutOfMemoryError,
    TryAgainError,
    ClusterDownError,
    KafkaConnectionError,
    KafkaTimeoutError,
    NodeNotReadyError,
    RequestTimedOutError,
)


class LostRace(Exception):
    """Another transaction committed the same work first (an id this one was about to record:
    a redelivery raced). The transaction rolls back whole; tried again, it finds the work
    answered. A serialization failure by another name, so transient (SQLSTATE 40001)."""

    sqlstate = "40001"


def _sqlstate(exc: BaseException) -> str | None:
    for obj in (exc, getattr(exc, "orig", None)):
        code = getattr(obj, "sqlstate", None) or getattr(obj, "pgcode", None)
        if isinstance(code, str):
            return code
    return None


def is_transient(exc: BaseException) -> bool:
    """True when ``exc`` (or anything in its cause/context chain) says a store or the broker
    is unreachable or briefly unable to serve, rather than that the work itself is wrong."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        cur = todo.pop()
        if cur is None or id(cur) in seen:
            continue
        seen.add(id(cur))
        if isinstance(cur, _TRANSIENT_TYPES):
            return True
        if isinstance(cur, sa_exc.DBAPIError) and cur.connection_invalidated:
            return True
        if isinstance(cur, sa_exc.InterfaceError | sa_exc.OperationalError):
            return True
        state = _sqlstate(cur)
        if state and (state[:2] in _TRANSIENT_SQLSTATE_CLASSES or state in _TRANSIENT_SQLSTATES):
            return True
        name = type(cur).__name__
        if name in {"ConnectionDoesNotExistError", "InterfaceError", "CannotConnectNowError"}:
            return True  # asyncpg's own, when not wrapped by SQLAlchemy
        if name == "TargetServerAttributeNotMatched":
            return True  # several hosts, none writable yet: a failover under way
        todo.extend([cur.__cause__, cur.__context__, getattr(cur, "orig", None)])
    return False

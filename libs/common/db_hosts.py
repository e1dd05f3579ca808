"""Connecting through a multi-host ``SLUICE_DATABASE_URL`` as libpq does
(docs/operations/failover.md, "What to give the services"): each host in turn, **each** within
the connect timeout, keeping the first that has the URL's ``target_session_attrs``
(``read-write``: the primary).

asyncpg's own multi-host connect bounds the whole attempt by one timeout: a host that accepts
the TCP connection but never answers (a hung or paused primary, or one behind a partition that
drops packets) spends all of it, and the hosts after it are never tried; measured on
2026-11-26 with the primary SIGSTOPped and a standby promoted: ``TimeoutError`` after 2 s and
after 10 s, every time, while the promoted standby answered at once. libpq applies
``connect_timeout`` per host, and so does this connector.

The host that last gave a connection is tried first: after a failover only the first
connection pays for the lost primary, not every connection a pool opens afterwards.
"""

from __future__ import annotations

from typing import Any

import asyncpg
from asyncpg.exceptions import (
    CannotConnectNowError,
    ConnectionDoesNotExistError,
    TargetServerAttributeNotMatched,
)
from sqlalchemy.dialects.postgresql.asyncpg import PGDialect_asyncpg
from sqlalchemy.engine import make_url

# A host that cannot serve now: the next one is tried. Anything else (a wrong password, a
# missing database) is the configuration's fault and is raised at once, as asyncpg does.
NEXT_HOST = (
    OSError,
    TimeoutError,
    TargetServerAttributeNotMatched,
    CannotConnectNowError,
    ConnectionDoesNotExistError,
)


class HostsInTurn:
    """The ``async_creator`` of an engine whose URL names several hosts."""

    def __init__(self, url: str, *, connect_timeout_s: float, command_timeout_s: float) -> None:
        _, kwargs = PGDialect_asyncpg().create_connect_args(make_url(url))
        hosts, ports = kwargs.pop("host"), kwargs.pop("port")
        if not isinstance(hosts, list) or len(hosts) < 2:
            raise ValueError("HostsInTurn needs a URL that names several hosts")
        self.hosts: list[tuple[str, int]] = [(h, int(p)) for h, p in zip(hosts, ports, strict=True)]
        self.kwargs: dict[str, Any] = {
            **kwargs,
            "timeout": connect_timeout_s,
            "command_timeout": command_timeout_s,
        }
        self.preferred = 0  # the host that last gave a connection

    def order(self) -> list[int]:
        return [self.preferred, *(i for i in range(len(self.hosts)) if i != self.preferred)]

    async def __call__(self) -> Any:
        last: BaseException | None = None
        for i in self.order():
            host, port = self.hosts[i]
            try:
                conn = await asyncpg.connect(host=host, port=port, **self.kwargs)
            except NEXT_HOST as exc:
                last = exc
                continue
            self.preferred = i
            return conn
        assert last is not None
        raise last

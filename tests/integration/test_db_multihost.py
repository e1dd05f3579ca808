"""The services' engine on a multi-host URL finds the promoted standby when the old primary
hangs instead of dying (contract 15.2): its postmaster SIGSTOPped, so the kernel still accepts
connections that nothing answers, as with a paused machine or a partition that drops packets.

asyncpg's own multi-host connect spends its one timeout on such a host and never tries the
next (shown here first); common.db.create_engine connects to each host in turn, each within
the connect timeout (common.db_hosts), and so reaches the promoted standby. A PostgreSQL
primary with two synchronous standbys from devstack.pg_cluster; no timing is asserted."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest
from sqlalchemy import text

from common.db import asyncpg_kwargs, create_engine
from devstack.pg_cluster import PgCluster

pytestmark = pytest.mark.integration

CONNECT_TIMEOUT_S = 2.0  # the services' default (SLUICE_DB_CONNECT_TIMEOUT_S)


@pytest.fixture
def cluster() -> Iterator[PgCluster]:
    # Not under pytest's tmp_path: PostgreSQL runs as an unprivileged user (devstack.chaos_stores).
    with tempfile.TemporaryDirectory(prefix="sluice-multihost-") as work:
        c = PgCluster(Path(work)).init()
        try:
            yield c
        finally:
            c.destroy()


async def _ports(url: str, connections: int) -> list[int]:
    """The port of the node each of ``connections`` connections of one engine reached."""
    engine = create_engine(url, connections, connect_timeout_s=CONNECT_TIMEOUT_S)
    held = []  # held open, so each is a connection of its own
    try:
        for _ in range(connections):
            held.append(await engine.connect())
        return [int((await c.execute(text("SELECT inet_server_port()"))).scalar_one()) for c in held]
    finally:
        for c in held:
            await c.close()
        await engine.dispose()


async def _asyncpg_alone(url: str) -> None:
    conn = await asyncpg.connect(**asyncpg_kwargs(url), timeout=CONNECT_TIMEOUT_S)
    await conn.close()


def test_a_hung_primary_does_not_hide_the_promoted_standby(cluster: PgCluster) -> None:
    hung = cluster.primary_name
    cluster.pause(hung)
    try:
        promoted, _ = cluster.failover()
        url = cluster.url()
        with pytest.raises(TimeoutError):  # asyncpg alone: the hung first host takes it all
            asyncio.run(_asyncpg_alone(url))
        assert asyncio.run(_ports(url, 3)) == [cluster.node(promoted).port] * 3
    finally:
        cluster.resume(hung)


def test_the_engine_writes_to_the_primary_only(cluster: PgCluster) -> None:
    """With every node up, each connection goes to the primary, never to a standby."""
    assert asyncio.run(_ports(cluster.url(), 3)) == [cluster.primary.port] * 3

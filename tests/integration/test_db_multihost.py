"""The services' engine on a multi-host URL finds the promoted standby when the old primary
hangs instead of dying (docs/operations/failover.md): its postmaster SIGSTOPped, so the kernel still accepts
connections that nothing answers, as with a paused machine or a partition that drops packets.

asyncpg's own multi-host connect spends its one timeout on such a host and never tries the
next (shown here first); common.db.create_engine connects to each host in turn, each within
the connect timeout (common.db_hosts), and so reaches the promoted standby. A PostgreSQL
primary with two synchronous standbys from tools.chaos.pg_cluster; no timing is asserted."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest
from sqlalchemy import text

from common.db import asyncpg_kwargs, create_engine
from tools.chaos.pg_cluster import PgCluster

pytestmark = pytest.mark.integration

CONNECT_TIMEOUT_S = 2.0  # the services' default (SLUICE_DB_CONNECT_TIMEOUT_S)
COMMAND_TIMEOUT_S = 1.0  # the services' is 10 s (SLUICE_DB_COMMAND_TIMEOUT_S): the same, sooner


@pytest.fixture
def cluster() -> Iterator[PgCluster]:
    # Not under pytest's tmp_path: PostgreSQL runs as an unprivileged user (tools.chaos.stores).
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


async def _pooled_then_hung(cluster: PgCluster, pool: int) -> list[int | str]:
    """``pool`` connections opened to the primary and returned to the pool; then the primary
    hangs and a standby is promoted; then ``pool + 1`` statements one after another: each the
    port that answered it, or "timeout"."""
    engine = create_engine(
        cluster.url(), pool, connect_timeout_s=CONNECT_TIMEOUT_S, command_timeout_s=COMMAND_TIMEOUT_S
    )
    outcomes: list[int | str] = []
    try:
        held = [await engine.connect() for _ in range(pool)]
        for c in held:
            await c.execute(text("SELECT 1"))
        for c in held:
            await c.close()  # back to the pool, each still connected to the primary
        cluster.pause(cluster.primary_name)
        cluster.failover()
        for _ in range(pool + 1):
            try:
                async with engine.connect() as c:
                    outcomes.append(int((await c.execute(text("SELECT inet_server_port()"))).scalar_one()))
            except TimeoutError:
                outcomes.append("timeout")
        return outcomes
    finally:
        await engine.dispose()


def test_one_statement_timing_out_on_a_hung_primary_retires_the_whole_pool(cluster: PgCluster) -> None:
    """Without common.db.timeout_is_a_lost_host every pooled connection to the hung primary
    timed out in turn (["timeout", "timeout", "timeout", port]: each a command timeout, 10 s
    in the services, before a request reached the promoted standby); with it the first
    timeout invalidates the pool and the next statement connects afresh to the new primary."""
    hung = cluster.primary_name
    try:
        outcomes = asyncio.run(_pooled_then_hung(cluster, 3))
    finally:
        cluster.resume(hung)
    promoted = cluster.primary.port
    assert outcomes == ["timeout", promoted, promoted, promoted]

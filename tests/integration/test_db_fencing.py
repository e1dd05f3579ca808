"""The fencing check against two real PostgreSQL servers (docs/operations/fencing.md): two
independent servers are both primaries, as an old primary that came back as a writer next to
the promoted standby would be. A service whose SLUICE_DATABASE_URL names both says so at error
level, naming them, and sets sluice_database_writable_hosts to 2; a single-host URL starts no
check. The servers are tools.chaos.stores.OwnPostgres (the pgserver wheel's initdb)."""

from __future__ import annotations

import asyncio
import logging
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import REGISTRY

from common.service import build_runtime
from common.settings import Settings
from tools.chaos.stores import OwnPostgres

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def two_primaries() -> Iterator[tuple[OwnPostgres, OwnPostgres]]:
    # Not under pytest's tmp_path: its parents are private to root, and PostgreSQL runs as
    # pgserver's unprivileged user (OwnPostgres opens its own directory to it).
    with (
        tempfile.TemporaryDirectory(prefix="sluice-fencing-a-") as da,
        tempfile.TemporaryDirectory(prefix="sluice-fencing-b-") as db,
    ):
        a = OwnPostgres(Path(da)).init()
        try:
            b = OwnPostgres(Path(db)).init()
            try:
                yield a, b
            finally:
                b.destroy()
        finally:
            a.destroy()


async def test_two_writable_hosts_are_reported(
    two_primaries: tuple[OwnPostgres, OwnPostgres], caplog: pytest.LogCaptureFixture
) -> None:
    a, b = two_primaries
    url = (
        f"postgresql+asyncpg://postgres@/postgres?host=127.0.0.1:{a.port}&host=127.0.0.1:{b.port}"
        "&target_session_attrs=read-write"
    )
    runtime = build_runtime("ledger", Settings(database_url=url, db_fencing_interval_s=0.5))
    caplog.set_level(logging.ERROR, logger="common.db")
    try:
        runtime.watch_database()  # what every service does as it starts
        deadline = time.monotonic() + 15
        while not [r for r in caplog.records if "database fencing" in r.getMessage()]:
            assert time.monotonic() < deadline, "no fencing line within 15 s"
            await asyncio.sleep(0.1)
    finally:
        await runtime.supervisor.stop()
        await runtime.engine.dispose()
    assert REGISTRY.get_sample_value("sluice_database_writable_hosts") == 2
    line = next(r for r in caplog.records if "database fencing" in r.getMessage())
    assert line.levelno == logging.ERROR
    assert f"127.0.0.1:{a.port}" in line.getMessage() and f"127.0.0.1:{b.port}" in line.getMessage()


async def test_a_single_host_url_starts_no_check(two_primaries: tuple[OwnPostgres, OwnPostgres]) -> None:
    a, _ = two_primaries
    runtime = build_runtime("ledger", Settings(database_url=a.url))
    try:
        runtime.watch_database()
        assert "database-fencing" not in runtime.supervisor.tasks
    finally:
        await runtime.supervisor.stop()
        await runtime.engine.dispose()

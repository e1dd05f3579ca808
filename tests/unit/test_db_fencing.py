"""The fencing check of a multi-host SLUICE_DATABASE_URL (docs/operations/fencing.md): which hosts a
URL names, which of them accept writes, and what the check reports when more than one does.
tests/integration/test_db_fencing.py runs it against two real PostgreSQL servers."""

from __future__ import annotations

import asyncio
import logging

import pytest
from prometheus_client import REGISTRY
from sqlalchemy.exc import ArgumentError

from common.db import DbHost, Fencing, database_hosts, writers
from common.service import build_runtime
from common.settings import Settings

pytestmark = pytest.mark.unit

MULTI = (
    "postgresql+asyncpg://sluice_ledger:pw@/sluice"
    "?host=pg-a:5432&host=pg-b:5433&host=pg-c:5432&target_session_attrs=read-write"
)


def writable_gauge() -> float | None:
    return REGISTRY.get_sample_value("sluice_database_writable_hosts")


def test_the_hosts_of_the_multi_host_form() -> None:
    assert database_hosts(MULTI) == [DbHost("pg-a", 5432), DbHost("pg-b", 5433), DbHost("pg-c", 5432)]


def test_the_other_multi_host_form_and_a_missing_port() -> None:
    url = "postgresql+asyncpg://u@/sluice?host=pg-a,pg-b&port=5432,5433"
    assert database_hosts(url) == [DbHost("pg-a", 5432), DbHost("pg-b", 5433)]
    with pytest.raises(ArgumentError):  # as the engine refuses it
        database_hosts("postgresql+asyncpg://u@/sluice?host=pg-a:5432&host=pg-b")


def test_a_single_host_url_names_one_host() -> None:
    assert database_hosts("postgresql+asyncpg://u@db.internal:6432/sluice") == [DbHost("db.internal", 6432)]
    assert database_hosts("postgresql+asyncpg://u@/sluice?host=/run/pg") == [DbHost("/run/pg", 5432)]
    assert Fencing.of("postgresql+asyncpg://u@db.internal:6432/sluice") is None


def test_only_hosts_out_of_recovery_accept_writes() -> None:
    a, b, c = DbHost("a", 1), DbHost("b", 2), DbHost("c", 3)
    assert writers({a: False, b: True, c: None}) == [a]
    assert writers({a: False, b: False, c: True}) == [a, b]
    assert writers({a: None, b: None}) == []  # a host that does not answer takes no write


def fencing_with(answers: dict[str, bool | None]) -> Fencing:
    fencing = Fencing.of(MULTI)
    assert fencing is not None

    async def probe(host: DbHost) -> bool | None:
        return answers[host.host]

    fencing.probe = probe
    return fencing


async def test_two_writable_hosts_are_named_at_error_level(caplog: pytest.LogCaptureFixture) -> None:
    fencing = fencing_with({"pg-a": False, "pg-b": False, "pg-c": True})
    with caplog.at_level(logging.WARNING, logger="common.db"):
        assert await fencing.check() == [DbHost("pg-a", 5432), DbHost("pg-b", 5433)]
    assert writable_gauge() == 2
    [line] = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert "pg-a:5432, pg-b:5433" in line.getMessage() and "SLUICE_DATABASE_URL" in line.getMessage()


async def test_one_primary_is_quiet_and_a_healed_split_is_said(caplog: pytest.LogCaptureFixture) -> None:
    answers: dict[str, bool | None] = {"pg-a": False, "pg-b": True, "pg-c": None}
    fencing = fencing_with(answers)
    with caplog.at_level(logging.WARNING, logger="common.db"):
        await fencing.check()
        assert writable_gauge() == 1 and not caplog.records
        answers["pg-b"] = False
        await fencing.check()
        answers["pg-b"] = True
        await fencing.check()
    assert [r.levelno for r in caplog.records] == [logging.ERROR, logging.WARNING]
    assert writable_gauge() == 1


async def test_the_loop_checks_at_start_then_every_interval() -> None:
    fencing = fencing_with({"pg-a": False, "pg-b": True, "pg-c": True})
    fencing.interval_s = 0.01
    calls = 0
    probe = fencing.probe

    async def counting(host: DbHost) -> bool | None:
        nonlocal calls
        calls += 1
        return await probe(host)

    fencing.probe = counting
    task = asyncio.create_task(fencing.run())
    await asyncio.sleep(0.05)
    task.cancel()
    assert calls >= 2 * len(fencing.hosts)


@pytest.mark.parametrize(
    ("url", "watched"), [(MULTI, True), ("postgresql+asyncpg://u@db:5432/sluice", False)]
)
async def test_every_service_runtime_watches_a_multi_host_url(url: str, watched: bool) -> None:
    """common.service.Runtime starts the check as the supervised task ``database-fencing``
    (serving() for gateway and admin, consumer_app's start for the consumers)."""
    runtime = build_runtime("ledger", Settings(database_url=url))
    try:
        runtime.watch_database()
        assert ("database-fencing" in runtime.supervisor.tasks) is watched
    finally:
        await runtime.supervisor.stop()
        await runtime.engine.dispose()

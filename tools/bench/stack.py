"""The stack ``make bench`` and ``make profile`` measure: fresh embedded stores (pgserver,
valkey, Apache Kafka), migrations, one process per service; and the CPU accounting over every process
of it, PostgreSQL's backends and Redis included (CPU per transfer summed over the whole stack,
not only the Python services)."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import asyncpg

from tools.stack.processes import free_port
from tools.stack.stores import Stores
from tools.stack.suite import Proc, Suite, ephemeral_secrets, migrate

SERVICES = ("ledger", "compliance", "webhooks", "admin", "gateway")
PG_SETTINGS = ("fsync", "synchronous_commit", "full_page_writes", "wal_level", "shared_buffers")


@dataclass
class BenchStack:
    work: Path
    stores: Stores
    suite: Suite
    procs: dict[str, Proc]
    pids: dict[str, int]  # every process measured: services, kafka, valkey, postgres
    token: str  # the admin token
    uncounted: list[str]  # stores given by URL: their CPU is not visible from here

    @property
    def asyncpg_dsn(self) -> str:
        return self.stores.database_url.replace("postgresql+asyncpg://", "postgresql://", 1)


def _postmaster_pid(work: Path) -> int | None:
    try:
        return int((work / "pgdata" / "postmaster.pid").read_text().split("\n", 1)[0])
    except (OSError, ValueError):
        return None


def pg_settings(dsn: str) -> dict[str, str]:
    """The PostgreSQL settings that decide how much a commit costs, as the server reports them."""
    import asyncio

    async def read() -> dict[str, str]:
        conn = await asyncpg.connect(dsn)
        try:
            return {name: str(await conn.fetchval(f"SHOW {name}")) for name in PG_SETTINGS}
        finally:
            await conn.close()

    return asyncio.run(read())


@contextlib.contextmanager
def bench_stack(
    work: Path, *, log_level: str = "WARNING", extra_env: dict[str, str] | None = None
) -> Iterator[BenchStack]:
    """The stack, its services started with ``extra_env`` too (a part's own settings: the sizing
    part's webhook receiver on the loopback)."""
    stores = Stores(work).start(
        fresh_kafka=True,
        database="sluice_bench",
        env={k: v for k, v in os.environ.items() if k not in ("SLUICE_KAFKA_BOOTSTRAP",)},
    )
    suite: Suite | None = None
    try:
        token = "bench-" + uuid.uuid4().hex
        env = {
            **stores.service_env(),
            **ephemeral_secrets("bench"),
            "SLUICE_ADMIN_TOKEN": token,
            "SLUICE_LOG_LEVEL": log_level,
            **(extra_env or {}),
        }
        migrate(env)
        suite = Suite(env, work / "logs")
        procs = {name: suite.start(name, free_port()) for name in SERVICES}
        suite.wait_ready(timeout=120)
        pids = {name: proc.popen.pid for name, proc in procs.items()}
        pids |= stores.named_processes()  # kafka, valkey
        pg = _postmaster_pid(work)
        if pg is not None:
            pids["postgres"] = pg
        seen = {name.split("-")[0] for name in pids}
        uncounted = [
            f"{store} ({setting})"
            for store, names, setting in (
                ("PostgreSQL", {"postgres"}, "SLUICE_DATABASE_URL"),
                ("Redis", {"valkey", "redis"}, "SLUICE_REDIS_URL"),
                ("Kafka", {"kafka", "tansu"}, "SLUICE_KAFKA_BOOTSTRAP"),
            )
            if not names & seen
        ]
        yield BenchStack(work, stores, suite, procs, pids, token, uncounted)
    finally:
        if suite is not None:
            suite.stop()
        stores.stop()

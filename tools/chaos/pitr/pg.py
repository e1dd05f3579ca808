"""Base backups, a WAL archive and point-in-time restores of the chaos runs' own PostgreSQL
(tools.chaos.stores.OwnPostgres), with the pgserver wheel's client binaries (pg_basebackup,
pg_verifybackup): what ``tools.chaos.pitr.drill`` drills and docs/operations/backups.md describes.

- :func:`enable_archiving`: ``wal_level=replica``, ``archive_mode=on``, an ``archive_command``
  that copies each finished segment into a directory (never over an existing file), then a
  restart (``archive_mode`` takes one);
- :func:`base_backup`: ``pg_basebackup`` in plain format without WAL (``-X none``: the archive
  holds it), checked by ``pg_verifybackup`` against its manifest;
- :func:`switch_and_archive`: close the current segment and wait until the archiver has it;
- :func:`restore`: a new data directory from the backup, ``restore_command`` reading the
  archive, ``recovery_target_time``, ``recovery_target_action=promote``, on a new port; it
  returns once the restored cluster is promoted and accepts writes.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import NoReturn

import asyncpg
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception_type,
    retry_if_result,
    stop_after_delay,
    wait_fixed,
)

from tools.chaos.stores import PG_USER, SYSTEM_USER, OwnPostgres, as_postgres, pg_bin

ARCHIVE_TIMEOUT_S = 60  # a quiet primary still closes a segment this often (the drill's RPO bound)
# What the restore's log says about where recovery stopped (docs/operations/backups.md).
RECOVERY_LINES = (
    "starting point-in-time recovery",
    "recovery stopping",
    "last completed transaction",
    "selected new timeline",
    "archive recovery complete",
)


def owned_dir(path: Path) -> Path:
    """A directory the PostgreSQL user owns (0700), made if missing."""
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o700)
    if os.geteuid() == 0:
        for p in (path, *path.rglob("*")):
            shutil.chown(p, SYSTEM_USER, SYSTEM_USER)
    return path


def dsn(pg: OwnPostgres, database: str = "postgres") -> str:
    return f"postgresql://{PG_USER}@127.0.0.1:{pg.port}/{database}"


async def _execute(pg: OwnPostgres, *sql: str) -> None:
    conn = await asyncpg.connect(dsn(pg))
    try:
        for statement in sql:
            await conn.execute(statement)
    finally:
        await conn.close()


def enable_archiving(pg: OwnPostgres, archive: Path) -> None:
    """Continuous archiving on a running ``pg`` (ALTER SYSTEM, then a fast restart)."""
    owned_dir(archive)
    command = f"test ! -f {archive}/%f && cp %p {archive}/%f"
    asyncio.run(
        _execute(
            pg,
            "ALTER SYSTEM SET wal_level = 'replica'",
            "ALTER SYSTEM SET archive_mode = 'on'",
            f"ALTER SYSTEM SET archive_command = '{command}'",
            f"ALTER SYSTEM SET archive_timeout = '{ARCHIVE_TIMEOUT_S}s'",
        )
    )
    pg.stop("fast")
    pg.start()


def base_backup(pg: OwnPostgres, dest: Path) -> None:
    """A plain-format base backup of the running ``pg`` into ``dest`` (a checkpoint at once,
    ``-c fast``), without WAL: restoring it needs the archive from the backup's start on.
    Verified against its manifest (checksums of every file) before it counts as taken."""
    owned_dir(dest.parent)
    shutil.rmtree(dest, ignore_errors=True)
    bin_ = pg_bin()
    as_postgres(
        str(bin_ / "pg_basebackup"),
        *("-h", "127.0.0.1", "-p", str(pg.port), "-U", PG_USER),
        *("-D", str(dest), "-F", "p", "-X", "none", "-c", "fast", "--no-sync"),
    )
    done = as_postgres(str(bin_ / "pg_verifybackup"), "--no-parse-wal", str(dest), check=False)
    if done.returncode != 0:
        raise RuntimeError(f"pg_verifybackup failed: {(done.stdout + done.stderr).strip()[-300:]}")


async def switch_and_archive(pg: OwnPostgres, timeout_s: float = 60.0) -> str:
    """``pg_switch_wal()``, then wait until the archiver reports that segment archived: every
    commit so far is then in the archive. The segment's name."""
    conn = await asyncpg.connect(dsn(pg))
    try:
        lsn = await conn.fetchval("SELECT pg_switch_wal()")
        segment = str(await conn.fetchval("SELECT pg_walfile_name($1)", lsn))

        async def archived() -> str:
            return str(await conn.fetchval("SELECT coalesce(last_archived_wal, '') FROM pg_stat_archiver"))

        await AsyncRetrying(
            retry=retry_if_result(lambda last: last < segment),
            stop=stop_after_delay(timeout_s),
            wait=wait_fixed(0.2),
            retry_error_callback=_timed_out(f"WAL segment {segment} not archived in {timeout_s} s"),
        )(archived)
        return segment
    finally:
        await conn.close()


def archive_bytes(archive: Path) -> tuple[int, int]:
    """(segments, bytes) in the archive."""
    files = [p for p in archive.iterdir() if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


def restore(backup: Path, archive: Path, target: datetime, workdir: Path) -> OwnPostgres:
    """A new cluster in ``workdir`` from ``backup``, replayed from ``archive`` up to ``target``
    (transactions committed at or before it; ``recovery_target_inclusive`` keeps its default)
    and promoted. Its own archiving is off: a restored cluster must not write into the archive
    of the one it was restored from (a new timeline would, under other names; a drill keeps
    the two apart)."""
    pg = OwnPostgres(workdir)
    pg.home.mkdir(parents=True, exist_ok=True)
    workdir.chmod(0o755)
    shutil.copytree(backup, pg.data)
    (pg.data / "backup_manifest").unlink(missing_ok=True)
    settings = {
        "archive_mode": "off",
        "restore_command": f"cp {archive}/%f %p",
        "recovery_target_time": target.isoformat(sep=" "),
        "recovery_target_action": "promote",
    }
    with (pg.data / "postgresql.auto.conf").open("a") as conf:
        conf.write("# tools.chaos.pitr.pg.restore\n")
        conf.writelines(f"{k} = '{v}'\n" for k, v in settings.items())
    (pg.data / "recovery.signal").touch()
    owned_dir(pg.home)
    owned_dir(pg.data)
    pg.start()  # pg_ctl -w: returns once the server accepts connections
    asyncio.run(_wait_promoted(pg))
    return pg


async def _wait_promoted(pg: OwnPostgres, timeout_s: float = 240.0) -> None:
    async def in_recovery() -> bool:
        conn = await asyncpg.connect(dsn(pg))
        try:
            return bool(await conn.fetchval("SELECT pg_is_in_recovery()"))
        finally:
            await conn.close()

    await AsyncRetrying(
        retry=retry_if_exception_type((OSError, asyncpg.PostgresError)) | retry_if_result(bool),
        stop=stop_after_delay(timeout_s),
        wait=wait_fixed(0.2),
        retry_error_callback=_timed_out(f"the restored cluster still in recovery after {timeout_s} s"),
    )(in_recovery)


def _timed_out(why: str) -> Callable[[RetryCallState], NoReturn]:
    def fail(state: RetryCallState) -> NoReturn:
        raise TimeoutError(why)

    return fail


def recovery_log(pg: OwnPostgres) -> list[str]:
    """The restored server's log lines that say where recovery started and stopped."""
    log = pg.home / "log"
    text = log.read_text(errors="replace") if log.exists() else ""
    return [line.strip() for line in text.splitlines() if any(k in line for k in RECOVERY_LINES)]


def elapsed(since: float) -> float:
    return round(time.monotonic() - since, 1)

"""WAL by table: what each table (its heap, its indexes and its TOAST together) wrote to
PostgreSQL's WAL between two positions, from ``pg_waldump``'s records. The sizing part
(tools.bench.sizing) prints it for the transfer window beside ``wal_bytes``: the total says how
much, this says where, so a change to the write path is chosen from figures, not guesses.

Each record counts whole (its header, data and full-page images: ``len (rec/tot)``'s total)
against the relation of its first block reference; a record without one (a commit, a
checkpoint, a running-transactions note) counts under its resource manager in parentheses
(``(Transaction)``). Relations are named through ``pg_relation_filenode`` of every relation
the database has, so a file rewritten since (a ``VACUUM FULL``) shows as its file number.
The stack's own PostgreSQL is local (tools.bench.stack): ``pg_waldump`` is the server's own,
found through ``pg_config``'s ``BINDIR``.
"""

from __future__ import annotations

import re
import subprocess
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import asyncpg

RECORD = re.compile(r"^rmgr: (\S+)\s+len \(rec/tot\):\s*\d+/\s*(\d+),")
FIRST_BLOCK = re.compile(r"blkref #0: rel \d+/(\d+)/(\d+)")

# Every relation of the database by its file: (database oid, file number) -> owning table.
# An index and a TOAST table count against the table they belong to.
_RELATIONS = """
SELECT (SELECT oid FROM pg_database WHERE datname = current_database())::int8 AS db,
       pg_relation_filenode(c.oid)::int8 AS node,
       coalesce(owner_ns.nspname || '.' || owner.relname, n.nspname || '.' || c.relname) AS name
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_index i ON i.indexrelid = c.oid
LEFT JOIN pg_class toasted ON toasted.reltoastrelid IN (c.oid, i.indrelid)
LEFT JOIN pg_class owner ON owner.oid = coalesce(toasted.oid, i.indrelid)
LEFT JOIN pg_namespace owner_ns ON owner_ns.oid = owner.relnamespace
WHERE pg_relation_filenode(c.oid) IS NOT NULL
"""


def lsn(position: float) -> str:
    """A WAL position (bytes from 0/0, as ``pg_wal_lsn_diff`` gives it) as an LSN text."""
    n = int(position)
    return f"{n >> 32:X}/{n & 0xFFFFFFFF:X}"


def tally(lines: Iterable[str]) -> Counter[tuple[int, int] | str]:
    """Bytes per (database oid, file number) of each record's first block, or per
    ``(resource manager)`` for a record that references no block."""
    out: Counter[tuple[int, int] | str] = Counter()
    for text in lines:
        m = RECORD.match(text)
        if m is None:
            continue
        block = FIRST_BLOCK.search(text)
        key: tuple[int, int] | str = (int(block[1]), int(block[2])) if block else f"({m[1]})"
        out[key] += int(m[2])
    return out


def by_table(tallied: Counter[tuple[int, int] | str], names: dict[tuple[int, int], str]) -> dict[str, float]:
    """Bytes per table, the largest first; a file of another database or not found by name
    counts as ``(other relations)``."""
    out: Counter[str] = Counter()
    for key, n in tallied.items():
        out[key if isinstance(key, str) else names.get(key, "(other relations)")] += n
    return {k: float(v) for k, v in out.most_common()}


async def relation_names(dsn: str) -> tuple[dict[tuple[int, int], str], str]:
    """(each relation file's owning table, the server's ``BINDIR``)."""
    db = await asyncpg.connect(dsn)
    try:
        rows = await db.fetch(_RELATIONS)
        bindir = await db.fetchval("SELECT setting FROM pg_config WHERE name = 'BINDIR'")
    finally:
        await db.close()
    return {(r["db"], r["node"]): r["name"] for r in rows}, str(bindir)


def waldump(bindir: str, pgdata: Path, start: float, end: float) -> list[str]:
    """``pg_waldump``'s record lines between two positions (its stderr carried on failure: a
    segment recycled by a checkpoint inside the window cannot be read)."""
    argv = [str(Path(bindir) / "pg_waldump"), "-p", str(pgdata / "pg_wal"), "-s", lsn(start), "-e", lsn(end)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)  # noqa: S603
    if done.returncode != 0 and not done.stdout:
        raise RuntimeError(f"pg_waldump: {done.stderr.strip()[:300]}")
    return done.stdout.splitlines()


async def measure(dsn: str, pgdata: Path, start: float, end: float) -> dict[str, float]:
    """Bytes of WAL per table between ``start`` and ``end`` (positions from ``pg_wal_lsn_diff``)."""
    names, bindir = await relation_names(dsn)
    return by_table(tally(waldump(bindir, pgdata, start, end)), names)


def line(per_table: dict[str, float], ops: float, top: int = 12) -> str:
    """``wal by table, bytes per transfer: ledger.outbox 4100 webhooks.deliveries 2900 ...``."""
    shown = " ".join(f"{k} {v / max(ops, 1):.0f}" for k, v in list(per_table.items())[:top])
    return f"wal by table, bytes per operation (the window, idle background included): {shown}"

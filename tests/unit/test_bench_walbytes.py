"""WAL by table (tools.bench.walbytes): pg_waldump's records summed per owning table, a record
that names no block under its resource manager, a file of another database apart."""

from __future__ import annotations

import pytest

from tools.bench import walbytes

pytestmark = pytest.mark.unit

DUMP = [
    "rmgr: Heap        len (rec/tot):     79/    79, tx:        757, lsn: 0/01A3F2D8, prev 0/01A3F2A0,"
    " desc: INSERT off: 5, flags: 0x00, blkref #0: rel 1663/5/16390 blk 0",
    "rmgr: Btree       len (rec/tot):     64/  8256, tx:        757, lsn: 0/01A3F328, prev 0/01A3F2D8,"
    " desc: INSERT_LEAF off: 2, blkref #0: rel 1663/5/16395 blk 1 FPW",
    "rmgr: Heap        len (rec/tot):     72/    72, tx:        758, lsn: 0/01A5F328, prev 0/01A3F328,"
    " desc: HOT_UPDATE old_xmax: 758, blkref #0: rel 1663/5/16390 blk 0",
    "rmgr: Transaction len (rec/tot):     34/    34, tx:        757, lsn: 0/01A3F370, prev 0/01A3F328,"
    " desc: COMMIT 2026-11-28 20:10:00.1 UTC",
    "rmgr: Heap        len (rec/tot):     59/    59, tx:          0, lsn: 0/01A3F398, prev 0/01A3F370,"
    " desc: INSERT off: 1, blkref #0: rel 1663/1/1259 blk 3",
    "pg_waldump: error: error in WAL record at 0/01A3F3E0: invalid record length",
]


def test_records_count_against_the_table_owning_their_first_block() -> None:
    """The heap and its index are one table, the full-page image counted with its record."""
    names = {(5, 16390): "ledger.outbox", (5, 16395): "ledger.outbox"}
    per = walbytes.by_table(walbytes.tally(DUMP), names)
    assert per == {"ledger.outbox": 79 + 8256 + 72, "(other relations)": 59.0, "(Transaction)": 34.0}
    assert list(per) == ["ledger.outbox", "(other relations)", "(Transaction)"]  # the largest first
    text = walbytes.line(per, 2)
    assert text.endswith("ledger.outbox 4204 (other relations) 30 (Transaction) 17")


def test_an_lsn_is_printed_as_postgresql_writes_it() -> None:
    assert walbytes.lsn(0x1A3F2D8) == "0/1A3F2D8"
    assert walbytes.lsn((3 << 32) + 0x10) == "3/10"

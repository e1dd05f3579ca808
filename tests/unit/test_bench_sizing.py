"""The sizing guide's arithmetic (tools.bench.projection) and the sizing part's accounting
(tools.bench.sizing): measured costs per operation, the idle background subtracted, and
what 1,000 to 100,000 transfers/s take, with the rate where one PostgreSQL primary stops."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from tools.bench import sizing as bench_sizing
from tools.bench.projection import Assumptions, Costs, one_primary_max_rate, project, render, topic_group
from tools.bench.sizing import Reading, delta, log_bytes, net, per_op

pytestmark = pytest.mark.unit
DOCS = Path(__file__).resolve().parents[2] / "docs" / "operations"

A = Assumptions()


def costs(**kw: Any) -> Costs:
    base: dict[str, Any] = {
        "cpu_ms": {
            "gateway": 1.0,
            "compliance": 1.0,
            "ledger": 1.0,
            "webhooks": 0.5,
            "admin": 0.0,
            "postgres": 1.0,
        },
        "wal_bytes": 5_000.0,
        "commits": 6.0,
        "kafka_records": 8.0,
        "kafka_bytes": 4_000.0,
        "valkey_calls": 4.0,
        "topics": {"ledger.commands": (1.0, 600.0), "events": (2.0, 1_500.0)},
    }
    return Costs(**(base | kw))


@pytest.mark.parametrize("rate", [1_000.0, 10_000.0, 100_000.0])
def test_doubling_a_cost_doubles_the_cores_of_that_service_alone(rate: float) -> None:
    c = costs()
    doubled = dataclasses.replace(c, cpu_ms={**c.cpu_ms, "ledger": 2.0})
    p, q = project(c, rate), project(doubled, rate)
    assert q.cores["ledger"] == pytest.approx(2 * p.cores["ledger"])
    assert q.cores["gateway"] == pytest.approx(p.cores["gateway"])
    # 1 ms a transfer at 1,000/s is one core busy, planned at 60 %: 1.67 cores
    assert p.cores["ledger"] == pytest.approx(rate / 1000 / 0.6)


def test_instances_round_up_and_never_fall_below_the_minimum() -> None:
    p = project(costs(), 1_000.0)
    assert p.instances["gateway"] == 2  # 1.67 cores: two one-core instances
    assert p.instances["admin"] == A.min_instances  # costs nothing per transfer, still two
    assert project(costs(), 10_000.0).instances["gateway"] == 17  # 16.7 cores


def test_the_primary_row_flips_where_one_primary_reaches_its_planned_share() -> None:
    c = costs()  # 6 commits: 30,000/s x 60 % / 6 = 3,000 transfers/s, before WAL (12,000) and CPU
    top, limit = one_primary_max_rate(c)
    assert (top, limit) == (pytest.approx(3_000.0), "commits")
    below, above = project(c, top * 0.99), project(c, top * 1.01)
    assert below.one_primary and below.primaries == 1
    assert not above.one_primary and above.primaries == 2
    assert project(c, 100_000.0).primaries == 34  # 600,000 commits/s over 18,000 each


def test_the_limit_reached_first_decides_the_rate() -> None:
    heavy_wal = costs(wal_bytes=50_000.0)  # 100 MB/s x 60 % / 50 kB = 1,200/s, under commits' 3,000
    top, limit = one_primary_max_rate(heavy_wal)
    assert (top, limit) == (pytest.approx(1_200.0), "WAL")
    assert project(heavy_wal, 1_000.0).pg_limit == "WAL"
    cpu_bound = costs(cpu_ms={"postgres": 20.0})  # 64 cores x 60 % / 20 ms = 1,920/s
    assert one_primary_max_rate(cpu_bound) == (pytest.approx(1_920.0), "CPU")
    assert one_primary_max_rate(costs(commits=0.0, wal_bytes=0.0, cpu_ms={}))[0] == float("inf")


def test_a_higher_ceiling_moves_the_flip() -> None:
    c = costs()
    assert one_primary_max_rate(c, Assumptions(pg_commits_s=60_000.0))[0] == pytest.approx(6_000.0)
    assert project(c, 5_000.0, Assumptions(pg_commits_s=60_000.0)).one_primary
    assert not project(c, 5_000.0).one_primary


def test_partitions_follow_the_consumer_instances_and_the_bytes() -> None:
    small = project(costs(), 1_000.0)
    assert small.partitions["ledger.commands"] == A.min_partitions  # 2 ledgers, 6 by default
    big = project(costs(), 100_000.0)
    assert big.partitions["ledger.commands"] == big.instances["ledger"] == 167
    # events: 1.5 kB x 100,000/s = 150 MB/s, 25 partitions by bytes; its groups: 167 compliance
    # instances, 84 webhooks ones
    assert big.partitions["events"] == max(big.instances["webhooks"], big.instances["compliance"])
    assert big.partitions["ledger.reads"] == A.min_partitions  # no transfer writes it: idle instances
    fat = project(costs(topics={"events": (1.0, 1_000_000.0)}), 1_000.0)  # 1 GB/s on one topic
    assert fat.partitions["events"] == 167  # 1,000 MB/s over 10 MB/s x 60 %


def test_brokers_grow_with_the_bytes_and_records_replicated() -> None:
    assert project(costs(), 1_000.0).brokers == A.min_brokers
    p = project(costs(), 100_000.0)  # 400 MB/s x 3 = 1,200 MB/s; 800,000 records/s x 3 = 2.4 M
    assert p.brokers == max(20, 14)
    doubled = project(costs(kafka_bytes=8_000.0), 100_000.0)
    assert doubled.brokers == 40
    assert p.kafka_records_s == pytest.approx(800_000.0)


def test_valkey_primaries() -> None:
    assert project(costs(), 10_000.0).valkey_primaries == 1  # 40,000 ops/s under 60,000
    assert project(costs(), 100_000.0).valkey_primaries == 7  # 400,000 over 60,000


def reading(at: float, cpu: float, commits: float, records: float) -> Reading:
    return Reading(
        at,
        {"ledger": cpu},
        {"wal_bytes": 10 * commits, "wal_fpi": 0.0, "commits": commits, "valkey_calls": 0.0},
        {"sluice.events": (records, 100 * records)},
    )


def test_a_window_less_the_idle_background_divided_by_the_operations() -> None:
    idle = bench_sizing.rates(delta(reading(0, 0.0, 0, 0), reading(10, 0.5, 20, 10)))  # 2 commits/s idle
    assert idle["commits"] == pytest.approx(2.0)
    window = delta(reading(100, 1.0, 100, 50), reading(130, 4.0, 1_160, 2_050))  # 30 s, 1,000 ops
    d = per_op(net(window, idle), 1_000)
    assert d["commits"] == pytest.approx((1_060 - 60) / 1_000)
    assert d["cpu_ms"]["ledger"] == pytest.approx(1000 * (3.0 - 1.5) / 1_000)
    assert d["kafka_records"] == pytest.approx((2_000 - 30) / 1_000)
    assert d["topics"]["sluice.events"][1] == pytest.approx((200_000 - 3_000) / 1_000)
    quiet = net(delta(reading(0, 0.0, 0, 0), reading(30, 0.1, 1, 0)), idle)
    assert quiet["commits"] == 0.0 and quiet["cpu_s"]["ledger"] == 0.0  # never below zero


def test_log_bytes_count_segments_of_topics_only(tmp_path: Path) -> None:
    for name, files in {
        "sluice.events-0": {"00.log": 300, "00.index": 10_485_760},
        "sluice.events-1": {"00.log": 200, "01.log": 100},
        "__consumer_offsets-0": {"00.log": 50},
        "__cluster_metadata-0": {"00.log": 9_999},
    }.items():
        (tmp_path / name).mkdir()
        for f, size in files.items():
            (tmp_path / name / f).write_bytes(b"x" * size)
    (tmp_path / "meta.properties").write_text("x")
    assert log_bytes([tmp_path]) == {"sluice.events": 600.0, "__consumer_offsets": 50.0}


def test_reply_topics_are_one_group_and_the_prefix_goes() -> None:
    assert topic_group("sluice.replies.gateway-1a") == "replies"
    assert topic_group("sluice.ledger.commands") == "ledger.commands"
    assert topic_group("__consumer_offsets") == "__consumer_offsets"
    op = {
        "per_op": {
            "cpu_ms": {"gateway": 1.0},
            **dict.fromkeys(("wal_bytes", "commits", "kafka_records", "kafka_bytes", "valkey_calls"), 1.0),
            "topics": {"sluice.replies.a": [1.0, 100.0], "sluice.replies.b": [2.0, 50.0]},
        }
    }
    assert Costs.from_json(op).topics == {"replies": (3.0, 150.0)}


def test_the_guide_renders_from_a_results_file_and_the_line_is_machine_readable() -> None:
    per = {
        "cpu_ms": {"gateway": 1.0, "ledger": 1.0, "postgres": 1.0},
        "wal_bytes": 5_000.0,
        "wal_fpi": 0.0,
        "commits": 6.0,
        "kafka_records": 8.0,
        "kafka_bytes": 4_000.0,
        "valkey_calls": 4.0,
        "topics": {"sluice.events": [2.0, 1_500.0]},
    }
    results = {
        "at": "2026-12-01 10:00",
        "machine": "2 cores",
        "rate": 100.0,
        "operations": {"transfer": {"ok": 3_000, "window_s": 40.0, "per_op": per}},
    }
    text = render(json.loads(json.dumps(results)))
    assert "One PostgreSQL primary holds up to **3,000 transfers/s**" in text
    assert "| primaries (databases or Citus workers) | 1 | 4 | 34 |" in text
    fields = bench_sizing.line("transfer", per).split()
    assert fields[:4] == ["sizing:", "transfer", "cpu_ms", "gateway"]
    assert fields[fields.index("commits") + 1] == "6.0"


def test_the_guide_shows_the_tables_of_the_run_kept_beside_it() -> None:
    """docs/operations/sizing.md quotes docs/operations/sizing.json: every table row and the
    one-primary sentence that --render prints from it are on the page."""
    page = (DOCS / "sizing.md").read_text()
    text = render(json.loads((DOCS / "sizing.json").read_text()))
    wanted = [ln for ln in text.splitlines() if ln.startswith(("|", "One PostgreSQL primary"))]
    assert len(wanted) > 60
    assert [ln for ln in wanted if ln not in page] == []


METRICS = """# HELP sluice_batch_size Messages per fetched batch, per consumer
# TYPE sluice_batch_size histogram
sluice_batch_size_bucket{consumer="ledger",le="1.0"} 3.0
sluice_batch_size_bucket{consumer="ledger",le="+Inf"} 10.0
sluice_batch_size_count{consumer="ledger"} 10.0
sluice_batch_size_sum{consumer="ledger"} 25.0
sluice_batch_size_count{consumer="webhooks-events"} 4.0
sluice_batch_size_sum{consumer="webhooks-events"} 40.0
# TYPE sluice_messages_consumed_total counter
sluice_messages_consumed_total{consumer="ledger",topic="t"} 25.0
"""


def test_counts_per_transfer_from_one_window() -> None:
    """Two ledgers' /metrics summed per consumer; the window's batches and the offset commits
    (records of __consumer_offsets) become the counts line, every process's CPU summed."""
    assert bench_sizing.batch_sums([METRICS, METRICS.replace("25.0", "15.0")]) == {
        "ledger": (40.0, 20.0),
        "webhooks-events": (80.0, 8.0),
    }
    pg = ("wal_bytes", "wal_fpi", "commits", "row_writes", "index_entries", "valkey_calls")
    before = Reading(0.0, {"ledger": 0.0, "kafka": 0.0}, dict.fromkeys(pg, 0.0), {})
    before.batches = {"ledger": (40.0, 20.0)}
    after = Reading(
        10.0,
        {"ledger": 2.0, "kafka": 1.0},
        {**dict.fromkeys(pg, 0.0), "wal_bytes": 1.2e6, "row_writes": 2_000.0},
        {"__consumer_offsets": (15.0, 1_500.0), "sluice.events": (200.0, 100_000.0)},
    )
    after.batches = {"ledger": (340.0, 120.0), "webhooks-events": (100.0, 10.0)}
    c = bench_sizing.counts(per_op(delta(before, after), 100))
    assert c["wal_bytes"] == 12_000.0 and c["row_writes"] == 20.0
    assert c["offset_commit_records"] == pytest.approx(0.15) and c["kafka_records"] == pytest.approx(2.15)
    assert c["cpu_ms"] == pytest.approx(30.0)
    assert c["batch ledger"] == pytest.approx(3.0) and c["batch webhooks-events"] == pytest.approx(10.0)
    text = bench_sizing.counts_line("transfer", c)
    assert text.startswith("counts: transfer wal_bytes 12000 row_writes 20.00 index_entries 0.00")
    assert "offset_commit_records 0.150" in text and text.endswith("batch webhooks-events 10.00")


def test_the_doors_refusals_by_bound_summed_over_gateways() -> None:
    text = (
        "# TYPE sluice_admission_shed_total counter\n"
        'sluice_admission_shed_total{reason="queue"} 70.0\n'
        'sluice_admission_shed_total{reason="instance"} 5.0\n'
    )
    assert bench_sizing.door_shed([text, text.replace("70.0", "1.0")]) == {"queue": 71.0, "instance": 10.0}

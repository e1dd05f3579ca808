"""The ``sizing`` part of ``make bench``: what one transfer and one customer cost, the
inputs of docs/operations/sizing.md.

On the bench's running suite (tools.bench.stack), one tenant set up through the API
(tools.stack.provision) with a webhook endpoint (a local receiver: deliveries are
part of what a transfer costs) is driven open loop at ``BENCH_SIZING_RATE`` (100/s):
``BENCH_SIZING_TRANSFERS`` (3,000) ``POST /v1/transfers`` through the overload driver, then
``BENCH_SIZING_CUSTOMERS`` (3,000) ``POST /v1/customers`` through tools.bench.load. Each window
runs from a quiet stack until the stack is quiet again (tools.bench.quiesce: consumer lag 0,
outboxes empty, CPU back at idle), so the work an operation sets off after its answer is in it.
Over each window:

- CPU seconds of every process (the five services, PostgreSQL with its backends, Kafka, Valkey);
- PostgreSQL: WAL bytes (``pg_wal_lsn_diff`` of ``pg_current_wal_lsn``; each window starts
  with a ``CHECKPOINT``), full-page images (``pg_stat_wal``), commits (``xact_commit`` summed
  over ``pg_stat_database``), rows written per table (``pg_stat_user_tables``);
- Kafka: records (end offsets summed over every topic and partition, Kafka's own included)
  and bytes (the size of the ``.log`` segment files in the embedded broker's ``log.dirs``: the
  record batches as written, headers and compression included, one replica);
- Valkey: calls (``INFO commandstats``, every command but INFO itself);
- each consumer's records and batches (the ``sluice_batch_size`` histogram of every
  service's ``/metrics``): its mean batch.

The same readings over ``BENCH_SIZING_IDLE_S`` (15) seconds of an idle stack just before give
the background rates (pollers, relays, the broker's own records), subtracted for the window's
length. Each total is divided by the operations decided 2xx. One ``sizing:`` line and one
``counts:`` line per operation (:func:`counts`; the transfer's are judged by
tools.bench.targets, docs/performance/index.md "Counts per transfer"); the figures go to
``sizing.json`` beside ``bench-results.json`` (``BENCH_OUT``, .sluice/bench) and
``python -m tools.bench.sizing --render FILE`` prints the guide's tables from it
(tools.bench.projection).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import redis
from aiokafka import AIOKafkaConsumer, TopicPartition
from prometheus_client.parser import text_string_to_metric_families

from common.kafka import admin_client
from tools.bench import projection as sizing
from tools.bench import walbytes
from tools.bench.driver import drive_once
from tools.bench.measure import cpu_seconds, run_load
from tools.bench.stack import BenchStack
from tools.bench.targets import Results
from tools.bench.transfers import settle
from tools.stack.processes import free_port
from tools.stack.provision import SCOPES, provision
from tools.stack.receiver import Receiver

RATE = float(os.environ.get("BENCH_SIZING_RATE", "100"))
TRANSFERS = int(os.environ.get("BENCH_SIZING_TRANSFERS", "3000"))
CUSTOMERS = int(os.environ.get("BENCH_SIZING_CUSTOMERS", "3000"))
IDLE_S = float(os.environ.get("BENCH_SIZING_IDLE_S", "15"))
WALLETS = int(os.environ.get("BENCH_SIZING_WALLETS", "200"))
STATS_FLUSH_S = 2.0  # PostgreSQL backends report their counters within 1 s of going idle
#: What the stack needs for this part: the webhook receiver listens on the loopback.
STACK_ENV = {"SLUICE_WEBHOOKS_ALLOW_PRIVATE_TARGETS": "true"}
CUSTOMER_BODY = json.dumps(
    {
        "account_type": "individual",
        "email": "ada@example.com",
        "country_code": "US",
        "service_user_id": "u-1",
        "full_name": "Ada Lovelace",
    }
)
SCALARS = (
    "wal_bytes",
    "wal_fpi",
    "commits",
    "row_writes",
    "index_entries",
    "kafka_records",
    "kafka_bytes",
    "valkey_calls",
)
OFFSETS_TOPIC = "__consumer_offsets"  # each group's offset commits are records of this topic


@dataclass
class Reading:
    """The stack's counters at one moment."""

    at: float  # time.monotonic()
    cpu: dict[str, float]  # process -> CPU seconds so far
    counters: dict[str, float]  # wal_bytes (the LSN), wal_fpi, commits, valkey_calls
    topics: dict[str, tuple[float, float]] = field(default_factory=dict)  # topic -> (end offsets, bytes)
    rows: dict[str, float] = field(default_factory=dict)  # schema.table -> rows inserted, updated, deleted
    batches: dict[str, tuple[float, float]] = field(default_factory=dict)  # consumer -> (records, batches)
    shed: dict[str, float] = field(default_factory=dict)  # the doors' refusals so far, by bound


def delta(before: Reading, after: Reading) -> dict[str, Any]:
    """What happened between two readings: seconds, CPU per process, each counter, each topic."""
    topics = {
        t: (r - before.topics.get(t, (0.0, 0.0))[0], b - before.topics.get(t, (0.0, 0.0))[1])
        for t, (r, b) in after.topics.items()
    }
    out: dict[str, Any] = {
        "seconds": after.at - before.at,
        "cpu_s": {k: after.cpu[k] - before.cpu.get(k, 0.0) for k in after.cpu},
        "topics": topics,
        "kafka_records": sum(r for r, _ in topics.values()),
        "kafka_bytes": sum(b for _, b in topics.values()),
        "rows": {t: n - before.rows.get(t, 0.0) for t, n in after.rows.items()},
        "batches": {
            c: (n - before.batches.get(c, (0.0, 0.0))[0], b - before.batches.get(c, (0.0, 0.0))[1])
            for c, (n, b) in after.batches.items()
        },
    }
    for k, v in after.counters.items():
        out[k] = v - before.counters.get(k, 0.0)
    return out


def rates(d: dict[str, Any]) -> dict[str, Any]:
    """A delta per second (the idle stack's background)."""
    return per_op(d, d["seconds"])


def net(d: dict[str, Any], idle: dict[str, Any]) -> dict[str, Any]:
    """A window's delta less the idle stack's rates over its length (never below 0)."""
    s = d["seconds"]
    out = dict(d)
    out["cpu_s"] = {k: max(0.0, v - s * idle["cpu_s"].get(k, 0.0)) for k, v in d["cpu_s"].items()}
    for k in SCALARS:
        out[k] = max(0.0, d.get(k, 0.0) - s * idle.get(k, 0.0))
    out["topics"] = {
        t: (
            max(0.0, r - s * idle["topics"].get(t, (0.0, 0.0))[0]),
            max(0.0, b - s * idle["topics"].get(t, (0.0, 0.0))[1]),
        )
        for t, (r, b) in d["topics"].items()
    }
    out["rows"] = {t: max(0.0, n - s * idle["rows"].get(t, 0.0)) for t, n in d["rows"].items()}
    return out


def per_op(d: dict[str, Any], n: float) -> dict[str, Any]:
    """A delta divided by ``n`` (operations, or seconds); CPU in milliseconds."""
    n = max(n, 1e-9)
    out: dict[str, Any] = {"cpu_ms": {k: 1000 * v / n for k, v in d["cpu_s"].items()}}
    out["cpu_s"] = {k: v / n for k, v in d["cpu_s"].items()}
    out |= {k: d.get(k, 0.0) / n for k in SCALARS}
    out["topics"] = {t: (r / n, b / n) for t, (r, b) in d["topics"].items()}
    out["rows"] = {t: v / n for t, v in d.get("rows", {}).items() if v}
    out["batch_mean"] = {c: r / b for c, (r, b) in sorted(d.get("batches", {}).items()) if b > 0}
    return out


def line(op: str, p: dict[str, Any]) -> str:
    """The machine-readable line of one operation (``sizing: transfer cpu_ms gateway 1.2 ...``)."""
    cpu = " ".join(f"{k} {p['cpu_ms'].get(k, 0.0):.3f}" for k in sizing.SERVICES + sizing.STORES)
    rest = " ".join(f"{k} {p.get(k, 0.0):.1f}" for k in SCALARS)  # a file from before a count: 0
    return f"sizing: {op} cpu_ms {cpu} {rest}"


def counts(p: dict[str, Any]) -> dict[str, float]:
    """The per-operation counts make bench prints and judges (they do not move with the
    machine): from one operation's figures (:func:`per_op`), CPU in milliseconds summed over
    every process, each consumer's mean batch as ``batch <consumer>``."""
    named = ("wal_bytes", "row_writes", "index_entries", "kafka_bytes", "kafka_records")
    out = {k: float(p[k]) for k in named}
    out["offset_commit_records"] = float(p["topics"].get(OFFSETS_TOPIC, (0.0, 0.0))[0])
    out["commits"] = float(p["commits"])
    out["cpu_ms"] = float(sum(p["cpu_ms"].values()))
    out |= {f"batch {c}": float(v) for c, v in p.get("batch_mean", {}).items()}
    return out


def counts_line(op: str, c: dict[str, float]) -> str:
    """``counts: transfer wal_bytes 11800 row_writes 19.2 ... batch ledger 2.10 ...``."""

    def shown(k: str, v: float) -> str:
        return f"{v:.0f}" if k.endswith("bytes") else f"{v:.3f}" if k.startswith("offset") else f"{v:.2f}"

    return f"counts: {op} " + " ".join(f"{k} {shown(k, v)}" for k, v in c.items())


# ---- reading the stack --------------------------------------------------------------------


async def _pg(dsn: str) -> tuple[dict[str, float], dict[str, float]]:
    """(WAL position, full-page images, commits, row writes, index entries; rows written per
    table). Index entries: each insert and each update that is not HOT writes one entry into
    every index of its table (a partial index counted as if its predicate held: an upper bound);
    a HOT update and a delete write none."""
    db = await asyncpg.connect(dsn)
    try:
        row = await db.fetchrow(
            "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::float8 AS wal,"
            " (SELECT wal_fpi FROM pg_stat_wal)::float8 AS fpi,"
            " (SELECT sum(xact_commit) FROM pg_stat_database)::float8 AS commits"
        )
        tables = await db.fetch(
            "SELECT schemaname || '.' || relname AS t, (n_tup_ins + n_tup_upd + n_tup_del)::float8 AS n,"
            " ((n_tup_ins + n_tup_upd - n_tup_hot_upd)"
            "  * (SELECT count(*) FROM pg_index i WHERE i.indrelid = s.relid))::float8 AS entries"
            " FROM pg_stat_user_tables s"
        )
        counters = {
            "wal_bytes": row["wal"],
            "wal_fpi": row["fpi"],
            "commits": row["commits"],
            "row_writes": sum(r["n"] for r in tables),
            "index_entries": sum(r["entries"] for r in tables),
        }
        return counters, {r["t"]: r["n"] for r in tables}
    finally:
        await db.close()


async def _checkpoint(dsn: str) -> None:
    db = await asyncpg.connect(dsn)
    try:
        await db.execute("CHECKPOINT")
    finally:
        await db.close()


async def _end_offsets(bootstrap: str) -> dict[str, float]:
    """Each topic's end offsets summed over its partitions (Kafka's own ``__consumer_offsets``
    too: each group's commits are written load; a consumer's ``topics()`` leaves it out)."""
    servers = bootstrap.split(",")
    async with admin_client(bootstrap_servers=servers) as admin:
        described = await admin.describe_topics()
    tps = [TopicPartition(t["topic"], p["partition"]) for t in described for p in t["partitions"]]
    c = AIOKafkaConsumer(bootstrap_servers=servers)
    await c.start()
    try:
        ends = await c.end_offsets(tps)
    finally:
        await c.stop()
    out: dict[str, float] = {}
    for tp, end in ends.items():
        out[tp.topic] = out.get(tp.topic, 0.0) + float(end)
    return out


def log_bytes(dirs: list[Path]) -> dict[str, float]:
    """Each topic's ``.log`` segment bytes in the brokers' ``log.dirs`` (``<topic>-<partition>``
    directories; KRaft's ``__cluster_metadata`` left out: not a topic clients write)."""
    out: dict[str, float] = {}
    for d in dirs:
        for part in d.glob("*-*"):
            topic, _, n = part.name.rpartition("-")
            if not part.is_dir() or not n.isdigit() or topic == "__cluster_metadata":
                continue
            size = sum(f.stat().st_size for f in part.glob("*.log"))
            out[topic] = out.get(topic, 0.0) + size
    return out


def _valkey_calls(url: str) -> float:
    r = redis.Redis.from_url(url)
    try:
        stats = r.info("commandstats")
    finally:
        r.close()
    return float(sum(v["calls"] for k, v in stats.items() if k != "cmdstat_info"))


def _summed(metrics: list[str], sample_name: str, label: str) -> dict[str, float]:
    """One sample's values in ``/metrics`` texts, summed over processes by ``label``."""
    out: dict[str, float] = {}
    for text in metrics:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == sample_name:
                    key = sample.labels.get(label, "")
                    out[key] = out.get(key, 0.0) + sample.value
    return out


def batch_sums(metrics: list[str]) -> dict[str, tuple[float, float]]:
    """Each consumer's (records, batches) so far, summed over its processes, from the
    ``sluice_batch_size`` histogram of their ``/metrics`` texts."""
    records = _summed(metrics, "sluice_batch_size_sum", "consumer")
    batches = _summed(metrics, "sluice_batch_size_count", "consumer")
    return {c: (records[c], batches.get(c, 0.0)) for c in records}


def door_shed(metrics: list[str]) -> dict[str, float]:
    """Commands the gateways' doors refused so far, by the bound that refused them
    (``sluice_admission_shed_total``: ``queue``, ``instance``, ``sandbox``, ``tenant``)."""
    return _summed(metrics, "sluice_admission_shed_total", "reason")


def _metrics(stack: BenchStack) -> list[str]:
    texts = []
    for proc in stack.procs.values():
        with contextlib.suppress(httpx.HTTPError):
            texts.append(httpx.get(proc.metrics_url + "/metrics", timeout=5).text)
    return texts


def read(stack: BenchStack) -> Reading:
    kafka_dirs = [n.workdir / "data" for n in stack.stores.kafka_nodes]
    offsets = asyncio.run(_end_offsets(stack.stores.kafka_bootstrap))
    sizes = log_bytes(kafka_dirs)
    counters, rows = asyncio.run(_pg(stack.asyncpg_dsn))
    counters["valkey_calls"] = _valkey_calls(stack.stores.redis_url)
    topics = {t: (offsets.get(t, 0.0), sizes.get(t, 0.0)) for t in set(offsets) | set(sizes)}
    cpu = {name: cpu_seconds(pid) for name, pid in stack.pids.items()}
    metrics = _metrics(stack)
    return Reading(time.monotonic(), cpu, counters, topics, rows, batch_sums(metrics), door_shed(metrics))


# ---- the part -----------------------------------------------------------------------------


def _hook(gateway: str, key: str) -> Receiver | None:
    """A webhook endpoint for the tenant (every event delivered, as a partner's would be)."""
    receiver = Receiver(free_port())
    r = httpx.post(
        gateway + "/v1/webhooks",
        json={"endpoint_url": receiver.url},
        headers={"Authorization": f"Bearer {key}", "Idempotency-Key": uuid.uuid4().hex},
        timeout=30,
    )
    if r.status_code != 201:
        print(
            f"sizing: no webhook endpoint ({r.status_code} {r.text[:200]}): deliveries not measured",
            flush=True,
        )
        receiver.stop()
        return None
    return receiver


def _drained(receiver: Receiver | None, quiet_s: float = 3.0, timeout: float = 120.0) -> None:
    """Until no delivery has arrived for ``quiet_s`` (deliveries are not in quiesce's reading)."""
    deadline = time.monotonic() + timeout
    while receiver is not None and time.monotonic() < deadline:
        if receiver.last_at and time.monotonic() - receiver.last_at >= quiet_s:
            return
        time.sleep(0.5)


def _window(
    stack: BenchStack,
    between: Callable[[], None],
    receiver: Receiver | None,
    drive: Callable[[], tuple[int, int]],
) -> tuple[dict[str, Any], int, int, dict[str, float]]:
    """One measured window from a quiet stack to a quiet stack: (delta, ok, not ok, WAL by
    table). It starts
    with a checkpoint (its own work not counted): the first change of each page after one
    writes the whole page to the WAL, so the window holds those full-page images, the most a
    window of its length can (in production a checkpoint comes every few minutes)."""
    asyncio.run(_checkpoint(stack.asyncpg_dsn))
    before = read(stack)
    ok, not_ok = drive()
    _drained(receiver)
    between()
    time.sleep(STATS_FLUSH_S)
    after = read(stack)
    refused = {k: v - before.shed.get(k, 0.0) for k, v in after.shed.items() if v > before.shed.get(k, 0.0)}
    if refused:
        shown = ", ".join(f"{k} {v:.0f}" for k, v in sorted(refused.items()))
        print(f"sizing: refused at the door (503 overloaded), by the bound that refused: {shown}", flush=True)
    return delta(before, after), ok, not_ok, _wal_by_table(stack, before, after)


def _wal_by_table(stack: BenchStack, before: Reading, after: Reading) -> dict[str, float]:
    """The window's WAL per table (tools.bench.walbytes), or nothing when it cannot be read
    (a PostgreSQL not local to the bench, a segment recycled inside the window)."""
    start, end = before.counters["wal_bytes"], after.counters["wal_bytes"]
    try:
        return asyncio.run(walbytes.measure(stack.asyncpg_dsn, stack.work / "pgdata", start, end))
    except (OSError, RuntimeError, asyncpg.PostgresError) as e:
        print(f"sizing: WAL by table not measured ({e})", flush=True)
        return {}


def _operation(
    op: str, d: dict[str, Any], idle: dict[str, Any], ok: int, not_ok: int, wal: dict[str, float]
) -> dict[str, Any]:
    """One operation's figures, printed: its ``sizing:`` line, its counts, where its WAL went."""
    fig = {
        "ok": ok,
        "not_ok": not_ok,
        "window_s": d["seconds"],
        "raw": per_op(d, ok),
        "per_op": per_op(net(d, idle), ok),
        "wal_by_table": wal,
    }
    fig["counts"] = counts(fig["per_op"])
    print(line(op, fig["per_op"]), flush=True)
    print(counts_line(op, fig["counts"]), flush=True)
    if wal:
        print(walbytes.line(wal, ok), flush=True)
    print(
        f"sizing: {op} {ok} decided 2xx, {not_ok} not, over {d['seconds']:.0f} s at {RATE:.0f}/s "
        f"(idle background subtracted; without: {line(op, fig['raw']).split(' cpu_ms ', 1)[1]})",
        flush=True,
    )
    return fig


def run(stack: BenchStack, between: Callable[[], None], results: Results) -> str:
    """Measure, print, write ``sizing.json``; returns the part's summary line."""
    gateway, admin = stack.procs["gateway"].url, stack.procs["admin"].url
    key, wallets = asyncio.run(
        provision(gateway, admin, stack.token, WALLETS, scopes=[*SCOPES, "webhooks:write"])
    )
    receiver = _hook(gateway, key)
    if not settle(gateway + "/v1/transfers", key, wallets):
        results.errors.append("sizing: the pipeline did not settle after set-up")
        return "bench-sizing: NOT SETTLED"
    _drained(receiver)
    between()
    idle_before = read(stack)
    time.sleep(IDLE_S)
    idle = rates(delta(idle_before, read(stack)))
    tenant = {"key": key, "wallets": wallets, "share": 1.0}

    def transfers() -> tuple[int, int]:
        secs = TRANSFERS / RATE
        plan = {"url": gateway + "/v1/transfers", "tenants": [tenant], "phases": [["sizing", RATE, secs]]}
        recs = drive_once(plan, secs)["requests"]
        ok = sum(1 for r in recs if 200 <= int(r["status"]) < 300)
        others = Counter(f"{r['status']} {r.get('reason') or r.get('cause') or ''}".strip() for r in recs)
        others = Counter({k: v for k, v in others.items() if not k.startswith("2")})
        if others:
            print(f"sizing: transfers not 2xx: {', '.join(f'{k}: {v}' for k, v in others.most_common())}")
        return ok, len(recs) - ok

    def customers() -> tuple[int, int]:
        args = ["--body", CUSTOMER_BODY, "--duration", str(CUSTOMERS / RATE), "--rate", str(RATE), "--unique"]
        res = run_load(
            gateway + "/v1/customers", *args, "--connections", "64", headers=[f"Authorization: Bearer {key}"]
        )
        return int(res["ok"]), int(res["errors"])

    ops: dict[str, Any] = {}
    for op, drive in (("transfer", transfers), ("customer", customers)):
        d, ok, not_ok, wal = _window(stack, between, receiver, drive)
        ops[op] = _operation(op, d, idle, ok, not_ok, wal)
        if not_ok > 0.01 * (ok + not_ok) or ok == 0:
            results.errors.append(f"sizing: {not_ok} of {ok + not_ok} {op} requests not 2xx at {RATE:.0f}/s")
    if receiver is not None:
        receiver.stop()
    out = {
        "at": time.strftime("%Y-%m-%d %H:%M"),
        "machine": f"{os.cpu_count()} cores",
        "rate": RATE,
        "kafka": stack.stores.kafka_kind,
        "kafka_bytes_source": "log segment files (.log) in the broker's log.dirs, one replica"
        if stack.stores.kafka_nodes
        else "not measured (the broker's log.dirs are not on this machine)",
        "webhook_endpoint": receiver is not None,
        "idle_per_s": idle,
        "operations": ops,
    }
    path = Path(os.environ.get("BENCH_OUT", ".sluice/bench")) / "sizing.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2))
    results.sizing = out
    results.counts = {**ops["transfer"]["counts"], "rate": RATE} if ops["transfer"]["ok"] else None
    top, limit = sizing.one_primary_max_rate(sizing.Costs.from_json(ops["transfer"]))
    print(f"sizing: written {path}; render the guide's tables: python -m tools.bench.sizing --render {path}")
    return f"bench-sizing: one PostgreSQL primary up to {top:,.0f} transfers/s ({limit} first); {path}"


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] != "--render":
        print("usage: python -m tools.bench.sizing --render .sluice/bench/sizing.json", file=sys.stderr)
        return 2
    print(sizing.render(json.loads(Path(argv[1]).read_text())), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

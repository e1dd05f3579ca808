"""The sizing guide's arithmetic (docs/operations/sizing.md): pure, unit-tested, no stack.

``make bench``'s ``sizing`` part (tools.bench.sizing) measures what one transfer and one
customer cost (CPU per process, PostgreSQL WAL bytes and commits, Kafka records and bytes,
Valkey calls) and writes them to ``.sluice/bench/sizing.json``. :func:`project` turns one
operation's costs into what a rate of it takes; :func:`render` prints the guide's tables from
that file (``python -m tools.bench.sizing --render .sluice/bench/sizing.json``), so
docs/operations/sizing.md can be regenerated from any run.

Every ceiling below is a planning figure, stated with where it comes from, and every resource
is planned at :data:`Assumptions.utilisation` of its ceiling (the headroom: a node lost, a
rebalance, a burst). Costs scale linearly with the rate; what does not (group commit makes
fewer, larger commits as the rate grows) makes these projections an upper bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

SERVICES = ("gateway", "compliance", "ledger", "webhooks", "admin")
STORES = ("postgres", "kafka", "valkey")
RATES = (1_000.0, 10_000.0, 100_000.0)
PREFIX = "sluice."

#: Who consumes each shared topic in a consumer group (its instances split the partitions):
#: a topic the operation writes needs at least as many partitions as its largest group has
#: instances.
TOPIC_CONSUMERS: dict[str, tuple[str, ...]] = {
    "compliance.commands": ("compliance",),
    "compliance.releases": ("compliance",),
    "ledger.commands": ("ledger",),
    "ledger.reads": ("ledger",),
    "webhooks.commands": ("webhooks",),
    "events": ("webhooks", "compliance"),
    "control.events": (),  # every gateway reads it whole, without a group
    "dlq": ("admin",),
    "journal.anchors": (),
}


def topic_group(name: str) -> str:
    """A topic's name in the guide: the prefix dropped, every gateway's reply topic as ``replies``
    (one single-partition topic per gateway instance); Kafka's own topics as they are."""
    short = name.removeprefix(PREFIX)
    return "replies" if short.startswith("replies.") else short


@dataclass(frozen=True)
class Assumptions:
    """The ceilings one unit of each resource is planned against (see docs/operations/sizing.md)."""

    utilisation: float = 0.6  # every resource planned at 60 % of its ceiling
    cores_per_instance: float = 1.0  # one service process: one event loop, at most one core
    min_instances: int = 2  # per service, so that losing one leaves one
    # One PostgreSQL primary (64 vCPU, NVMe, a synchronous standby): commits are group-committed,
    # but each waits for the standby's flush; the standby replays WAL in one process.
    pg_commits_s: float = 30_000.0
    pg_wal_mb_s: float = 100.0
    pg_cores: float = 64.0
    kafka_replication: int = 3
    broker_mb_s: float = 100.0  # written per broker, replicas included
    broker_records_s: float = 300_000.0  # record writes per broker, replicas included
    broker_partitions: int = 4_000  # partition replicas per broker
    min_brokers: int = 3
    partition_mb_s: float = 10.0  # written to one partition
    min_partitions: int = 6  # SLUICE_KAFKA_TOPIC_PARTITIONS' default
    valkey_ops_s: float = 100_000.0  # one Valkey primary (one command thread), no pipelining


@dataclass(frozen=True)
class Costs:
    """What one operation (a transfer decided 2xx, a customer created) costs, as measured."""

    cpu_ms: dict[str, float]  # per process: the services and the stores
    wal_bytes: float
    commits: float
    kafka_records: float
    kafka_bytes: float
    valkey_calls: float
    topics: dict[str, tuple[float, float]] = field(default_factory=dict)  # topic -> (records, bytes)

    @classmethod
    def from_json(cls, op: dict[str, Any]) -> Costs:
        per = op["per_op"]
        topics: dict[str, tuple[float, float]] = {}
        for name, (records, size) in per.get("topics", {}).items():
            old = topics.get(topic_group(name), (0.0, 0.0))
            topics[topic_group(name)] = (old[0] + float(records), old[1] + float(size))
        return cls(
            cpu_ms={k: float(v) for k, v in per["cpu_ms"].items()},
            wal_bytes=float(per["wal_bytes"]),
            commits=float(per["commits"]),
            kafka_records=float(per["kafka_records"]),
            kafka_bytes=float(per["kafka_bytes"]),
            valkey_calls=float(per["valkey_calls"]),
            topics=topics,
        )


@dataclass(frozen=True)
class Projection:
    rate: float
    cores: dict[str, float]  # per service, at the planned utilisation
    instances: dict[str, int]
    pg_commits_s: float
    pg_wal_mb_s: float
    pg_cores: float  # PostgreSQL's CPU, at the planned utilisation
    pg_load: float  # the share of one primary's ceiling, by its tightest limit
    pg_limit: str  # which limit that is: "commits", "WAL" or "CPU"
    primaries: int  # databases (or Citus workers) needed at the planned utilisation
    kafka_records_s: float
    kafka_mb_s: float  # produced, before replication
    partitions: dict[str, int]  # per shared topic
    brokers: int
    valkey_ops_s: float
    valkey_primaries: int

    @property
    def one_primary(self) -> bool:
        return self.primaries == 1


def _pg_shares(c: Costs, a: Assumptions) -> dict[str, float]:
    """One transfer's share of one primary's ceiling, by limit."""
    return {
        "commits": c.commits / a.pg_commits_s,
        "WAL": c.wal_bytes / 1e6 / a.pg_wal_mb_s,
        "CPU": c.cpu_ms.get("postgres", 0.0) / 1000 / a.pg_cores,
    }


def one_primary_max_rate(c: Costs, a: Assumptions = Assumptions()) -> tuple[float, str]:
    """The highest rate one primary takes at the planned utilisation, and the limit that sets it."""
    shares = _pg_shares(c, a)
    limit = max(shares, key=lambda k: shares[k])
    return (a.utilisation / shares[limit] if shares[limit] > 0 else math.inf), limit


def _need(load: float, ceiling: float, a: Assumptions) -> int:
    """Units of a resource for ``load``, each run at the planned utilisation of ``ceiling``."""
    return math.ceil(load / (ceiling * a.utilisation) - 1e-9) if load > 0 else 0


def project(c: Costs, rate: float, a: Assumptions = Assumptions()) -> Projection:
    """What ``rate`` operations per second take, each resource at ``a.utilisation``."""
    cores = {s: rate * c.cpu_ms.get(s, 0.0) / 1000 / a.utilisation for s in SERVICES}
    instances = {s: max(a.min_instances, math.ceil(cores[s] / a.cores_per_instance - 1e-9)) for s in SERVICES}
    shares = _pg_shares(c, a)
    limit = max(shares, key=lambda k: shares[k])
    pg_load = rate * shares[limit]
    records_s, mb_s = rate * c.kafka_records, rate * c.kafka_bytes / 1e6
    partitions = {}
    for topic, consumers in TOPIC_CONSUMERS.items():
        topic_mb_s = rate * c.topics.get(topic, (0.0, 0.0))[1] / 1e6
        # a group's instances all need a partition of a topic it reads; one the operation
        # never writes (ledger.reads for a transfer) is left at the default
        floor = max([instances[s] for s in consumers], default=0) if topic_mb_s > 0 else 0
        partitions[topic] = max(a.min_partitions, floor, _need(topic_mb_s, a.partition_mb_s, a))
    rf = a.kafka_replication
    brokers = max(
        a.min_brokers,
        _need(mb_s * rf, a.broker_mb_s, a),
        _need(records_s * rf, a.broker_records_s, a),
        math.ceil(sum(partitions.values()) * rf / a.broker_partitions),
    )
    valkey_ops = rate * c.valkey_calls
    return Projection(
        rate=rate,
        cores=cores,
        instances=instances,
        pg_commits_s=rate * c.commits,
        pg_wal_mb_s=rate * c.wal_bytes / 1e6,
        pg_cores=rate * c.cpu_ms.get("postgres", 0.0) / 1000 / a.utilisation,
        pg_load=pg_load,
        pg_limit=limit,
        primaries=max(1, math.ceil(pg_load / a.utilisation - 1e-9)),
        kafka_records_s=records_s,
        kafka_mb_s=mb_s,
        partitions=partitions,
        brokers=brokers,
        valkey_ops_s=valkey_ops,
        valkey_primaries=max(1, _need(valkey_ops, a.valkey_ops_s, a)),
    )


# ---- the guide's tables -------------------------------------------------------------------


def _n(x: float) -> str:
    """A figure as the guide prints it: thousands separated, few digits."""
    if x >= 100:
        return f"{x:,.0f}"
    return f"{x:.1f}" if x >= 10 else f"{x:.2f}"


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return out + ["| " + " | ".join(r) + " |" for r in rows]


def inputs_table(ops: dict[str, dict[str, Any]]) -> list[str]:
    """The measured costs, one column per operation."""
    names = list(ops)
    costs = {n: Costs.from_json(ops[n]) for n in names}
    rows = [
        [f"CPU ms, {p}"] + [f"{costs[n].cpu_ms.get(p, 0.0):.3f}" for n in names] for p in SERVICES + STORES
    ]
    for label, key in (
        ("PostgreSQL WAL bytes", "wal_bytes"),
        ("PostgreSQL commits", "commits"),
        ("Kafka records", "kafka_records"),
        ("Kafka bytes (log segments)", "kafka_bytes"),
        ("Valkey calls", "valkey_calls"),
    ):
        rows.append([label] + [f"{getattr(costs[n], key):,.1f}" for n in names])
    rows.append(
        ["measured over (decided 2xx)"] + [f"{ops[n]['ok']:,} in {ops[n]['window_s']:.0f} s" for n in names]
    )
    return _table(["per operation", *names], rows)


def projection_table(c: Costs, rates: tuple[float, ...] = RATES, a: Assumptions = Assumptions()) -> list[str]:
    ps = [project(c, r, a) for r in rates]
    rows = [
        [f"{s}: cores / instances"] + [f"{_n(p.cores[s])} / {p.instances[s]}" for p in ps] for s in SERVICES
    ]
    rows += [
        ["PostgreSQL commits/s"] + [_n(p.pg_commits_s) for p in ps],
        ["PostgreSQL WAL MB/s"] + [_n(p.pg_wal_mb_s) for p in ps],
        ["PostgreSQL cores"] + [_n(p.pg_cores) for p in ps],
        ["share of one primary's ceiling (limit)"] + [f"{p.pg_load:.0%} ({p.pg_limit})" for p in ps],
        ["primaries (databases or Citus workers)"] + [str(p.primaries) for p in ps],
        ["Kafka records/s (produced)"] + [_n(p.kafka_records_s) for p in ps],
        ["Kafka MB/s (produced; x3 written)"] + [_n(p.kafka_mb_s) for p in ps],
        ["Kafka partitions (shared topics)"] + [str(sum(p.partitions.values())) for p in ps],
        ["Kafka brokers"] + [str(p.brokers) for p in ps],
        ["Valkey ops/s"] + [_n(p.valkey_ops_s) for p in ps],
        ["Valkey primaries (shards)"] + [str(p.valkey_primaries) for p in ps],
    ]
    return _table(["", *[f"{r:,.0f}/s" for r in rates]], rows)


def partitions_table(c: Costs, rates: tuple[float, ...] = RATES, a: Assumptions = Assumptions()) -> list[str]:
    ps = [project(c, r, a) for r in rates]
    rows = []
    for topic in TOPIC_CONSUMERS:
        records, size = c.topics.get(topic, (0.0, 0.0))
        consumers = ", ".join(TOPIC_CONSUMERS[topic]) or "-"
        rows.append(
            [topic, consumers, f"{records:.2f}", f"{size:,.0f}"] + [str(p.partitions[topic]) for p in ps]
        )
    for topic in sorted(set(c.topics) - set(TOPIC_CONSUMERS)):
        records, size = c.topics[topic]
        rows.append([topic, "(not sized here)", f"{records:.2f}", f"{size:,.0f}"] + ["-" for _ in ps])
    head = ["topic", "groups", "records/op", "bytes/op", *[f"partitions at {r:,.0f}/s" for r in rates]]
    return _table(head, rows)


def rows_table(ops: dict[str, dict[str, Any]], top: int = 30) -> list[str]:
    """Rows inserted, updated or deleted per operation, by table, the busiest first: where the
    WAL and the commits come from, and what a tenant's database carries."""
    names = list(ops)
    rows = {n: ops[n]["per_op"].get("rows", {}) for n in names}
    tables = sorted(
        {t for r in rows.values() for t in r}, key=lambda t: (-sum(r.get(t, 0.0) for r in rows.values()), t)
    )
    body = [[t] + [f"{rows[n].get(t, 0.0):.2f}" for n in names] for t in tables[:top]]
    if not body:  # a results file from before the part counted rows
        return []
    return _table(["rows written per operation", *names], body)


def render(results: dict[str, Any], a: Assumptions = Assumptions()) -> str:
    """The guide's generated tables from a ``sizing.json``."""
    ops = results["operations"]
    transfer = Costs.from_json(ops["transfer"])
    rows = rows_table(ops)
    top, limit = one_primary_max_rate(transfer, a)
    out = [
        f"Measured {results['at']} on {results['machine']} at {results['rate']:.0f} operations/s, open loop.",
        "",
        *inputs_table(ops),
        "",
        *([*rows, ""] if rows else []),
        f"Transfers, every resource at {a.utilisation:.0%} of its ceiling:",
        "",
        *projection_table(transfer, RATES, a),
        "",
        f"One PostgreSQL primary holds up to **{top:,.0f} transfers/s** at {a.utilisation:.0%} of "
        f"its ceiling; the limit reached first is {limit}.",
        "",
        "Kafka partitions per topic (transfers):",
        "",
        *partitions_table(transfer, RATES, a),
    ]
    if "customer" in ops:
        customers = Costs.from_json(ops["customer"])
        out += ["", "Customers created, every resource at the same share:", ""]
        out += projection_table(customers, (100.0, 1_000.0), a)
    return "\n".join(out) + "\n"

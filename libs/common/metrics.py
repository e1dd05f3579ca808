"""The suite's own Prometheus metrics (prometheus-client, default registry), beside those the
kept integrations emit: FastStream's Kafka Prometheus middleware (``sluice_received_messages_*``,
``sluice_published_messages_*`` per topic, see :func:`common.broker.create_broker`) and
Litestar's Prometheus plugin (``sluice_http_*`` by route and status, gateway and admin).

Every service serves them at ``GET /metrics``; names are listed in docs/operations.md.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

BATCH_SIZE = Histogram(
    "sluice_batch_size",
    "Messages per fetched batch, per consumer",
    ["consumer"],
    buckets=(1, 2, 5, 10, 20, 50, 100, 200, 500),
)
CONSUMED = Counter(
    "sluice_messages_consumed_total",
    "Messages a consumer finished (committed), per topic",
    ["consumer", "topic"],
)
FAILED = Counter(
    "sluice_messages_failed_total",
    "Handling attempts that raised (each attempt; poison counted once), per topic",
    ["consumer", "topic"],
)
BATCH_SPLITS = Counter(
    "sluice_batch_splits_total",
    "Batches that failed deterministically and were run again one message at a time",
    ["consumer"],
)
TRANSIENT_RETRIES = Counter(
    "sluice_transient_retries_total", "Retries of work waiting out a transient fault", ["component"]
)
CONSUMER_LAG = Gauge(
    "sluice_consumer_lag",
    "Messages behind the partition's high watermark, as of the last fetch",
    ["consumer", "topic", "partition"],
)
PRODUCED = Counter(
    "sluice_kafka_produced_total",
    "Records produced straight through aiokafka (the hot path when spans are not exported)",
    ["topic"],
)
DEAD_LETTERS = Counter("sluice_dead_letters_total", "Messages dead-lettered", ["service", "topic"])
AUTHORITY_REFUSED = Counter(
    "sluice_authority_refused_total",
    "Commands refused because their authority did not verify, by why",
    ["service", "why"],
)
REPLIES_REFUSED = Counter(
    "sluice_replies_refused_total",
    "Replies not published because their address is not a reply topic (common.replies)",
    ["service"],
)
TRANSFER_IDS_REUSED = Counter(
    "sluice_transfer_id_reused_total",
    "Commands refused for naming a transfer id another command holds (nothing given back)",
    ["service"],
)
STAMP_DISAGREED = Counter(
    "sluice_stamp_disagreed_total",
    "Commands whose gateway-stamped fact about the tenant disagreed with the owner's record, which decided",
    ["service", "field"],
)
REDRIVE_REFUSED = Counter(
    "sluice_redrive_refused_total",
    "Dead letters admin refused to redrive (origin not verified, or never to be redriven), by reason",
    ["reason"],
)
OUTBOX_BACKLOG = Gauge("sluice_outbox_backlog", "Outbox rows not yet published", ["schema"])
TASK_RESTARTS = Counter("sluice_task_restarts_total", "Background task crashes (restarted)", ["task"])
IDEMPOTENCY_REPLAYS = Counter("sluice_idempotency_replays_total", "Answers replayed for a same-key retry")
# The gateway's 503s for admitted work, by details.reason (docs/guides/errors.md, "Reasons"):
# upstream_timeout (no result within SLUICE_GATEWAY_TIMEOUT_S), store_unavailable, in_flight.
# The door's refusals (overloaded) are sluice_admission_shed_total: they never reach the
# pipeline.
UNAVAILABLE = Counter(
    "sluice_gateway_unavailable_total",
    "Requests the gateway admitted and answered 503 provider_unavailable, by details.reason",
    ["reason"],
)
RECONCILE_OK = Gauge(
    "sluice_reconcile_ok", "1 when the last reconciliation of a tenant and mode found nothing, else 0"
)
RECONCILE_DISCREPANCIES = Gauge(
    "sluice_reconcile_discrepancies", "Discrepancies the last reconciliation found (0 when ok)"
)
RECONCILE_LAST_RUN = Gauge(
    "sluice_reconcile_last_run_timestamp_seconds", "When the last reconciliation finished (Unix time)"
)
CHAIN_CPU = Counter(
    "sluice_journal_chain_cpu_seconds_total",
    "CPU the ledger spent linking journal entries into their hash chains",
)
CHAINED = Counter("sluice_journal_chained_entries_total", "Journal entries linked into a hash chain")
# The journal's anchors (docs/security.md, "Journal anchors, round 2"; ledger.anchors): the age
# of the oldest journal entry no anchor covers (0 when every chain is anchored or the journal is
# idle), the anchoring interval it is compared with (deploy/prometheus/alerts.yml), and the
# heads an instance refused to anchor because their chain no longer extends the chain's newest
# anchor.
UNANCHORED = Gauge(
    "sluice_journal_unanchored_seconds",
    "Age of the oldest journal entry not yet covered by an anchor (0: all anchored, or idle)",
)
ANCHOR_INTERVAL = Gauge(
    "sluice_journal_anchor_interval_seconds", "SLUICE_JOURNAL_ANCHOR_INTERVAL_S, for the unanchored alert"
)
ANCHOR_REFUSED = Counter(
    "sluice_journal_anchor_refused_total",
    "Chain heads not anchored because the chain no longer extends its newest anchor (per turn)",
)
# The fencing check (common.db.Fencing, docs/operations/fencing.md): how many hosts of a
# multi-host SLUICE_DATABASE_URL accepted writes at the last check (1 is right; 2 or more is a
# split brain).
WRITABLE_HOSTS = Gauge(
    "sluice_database_writable_hosts",
    "Hosts of SLUICE_DATABASE_URL that accept writes (pg_is_in_recovery() false), at the last check",
)

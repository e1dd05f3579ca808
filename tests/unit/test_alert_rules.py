"""deploy/prometheus/alerts.yml and alerts-cloudnative-pg.yml: every expression parses as PromQL, names only
metrics some process really exports, and every alert carries a severity, a summary, a
description and a runbook_url whose anchor is a heading of docs/operations/runbooks.md.

Syntax: promql-parser (the Rust crate promql-parser's Python binding, a development
dependency); promtool is not installed (no Prometheus binary comes with `make setup`).
Names: the suite's own are read from the code that declares them (prometheus-client's
Counter, Gauge, Histogram in services/ and libs/common/), the kept integrations' from the
integrations themselves (FastStream's Kafka middleware built with the suite's prefix,
Litestar's Prometheus middleware's source); the rest must belong to one of the external
exporters listed in EXTERNAL, by name.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import promql_parser
import pytest
import yaml
from markdown.extensions.toc import slugify

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "deploy" / "prometheus" / "alerts.yml"
# CloudNativePG's variants of the PostgreSQL alerts (deploy/k8s's cloudnative-pg overlay)
RULE_FILES = (RULES, ROOT / "deploy" / "prometheus" / "alerts-cloudnative-pg.yml")
JMX_EXPORTER = ROOT / "deploy" / "prometheus" / "kafka-jmx-exporter.yml"
RUNBOOKS = ROOT / "docs" / "operations" / "runbooks.md"

# Metrics of processes that are not the suite's, by exporter. A platform team runs these next
# to Prometheus; docs/operations/runbooks.md says which alert needs which.
EXTERNAL: dict[str, set[str]] = {
    "Prometheus (scrape health)": {"up"},
    # prometheus-community/postgres_exporter, default collectors: pg_up, the replication
    # collector (pg_replication_*) and the builtin pg_stat_replication map.
    "postgres_exporter": {
        "pg_up",
        "pg_replication_is_replica",
        "pg_replication_lag_seconds",
        "pg_stat_replication_pg_wal_lsn_diff",
    },
    "kube-state-metrics": {"kube_deployment_status_replicas_unavailable", "kube_job_status_failed"},
    "kafka_exporter (danielqsj/kafka_exporter)": {"kafka_consumergroup_lag", "kafka_consumergroup_lag_sum"},
    # CloudNativePG 1.30's instance exporter: its collector (pkg/management/postgres/webserver/
    # metricserver/pg_collector.go) and default monitoring queries (config/manager/
    # default-monitoring.yaml: pg_replication, pg_stat_replication, pg_stat_archiver)
    "CloudNativePG": {
        "cnpg_collector_up",
        "cnpg_collector_pg_wal_archive_status",
        "cnpg_pg_replication_in_recovery",
        "cnpg_pg_replication_streaming_replicas",
        "cnpg_pg_stat_replication_replay_diff_bytes",
        "cnpg_pg_stat_archiver_last_failed_time",
        "cnpg_pg_stat_archiver_last_archived_time",
    },
    # the Barman Cloud plugin 0.14 (its documentation, "Observability")
    "Barman Cloud plugin": {
        "barman_cloud_cloudnative_pg_io_last_failed_backup_timestamp",
        "barman_cloud_cloudnative_pg_io_last_available_backup_timestamp",
    },
    "cert-manager": {"certmanager_certificate_expiration_timestamp_seconds"},
}

_DECLARED = re.compile(r"\b(Counter|PromCounter|Gauge|Histogram|Summary)\(\s*\"([a-zA-Z_:][a-zA-Z0-9_:]*)\"")


def exposed(kind: str, name: str) -> set[str]:
    """The sample names prometheus-client exposes for a metric declared as ``name``."""
    if kind in ("counter", "Counter", "PromCounter"):
        base = name.removesuffix("_total")
        return {base + "_total", base + "_created"}
    if kind in ("histogram", "Histogram"):
        return {name, *(name + s for s in ("_bucket", "_sum", "_count", "_created"))}
    if kind in ("summary", "Summary"):
        return {name, *(name + s for s in ("_sum", "_count", "_created"))}
    return {name}


def declared_in_code() -> set[str]:
    names: set[str] = set()
    for folder in (ROOT / "services", ROOT / "libs" / "common"):
        for path in folder.rglob("*.py"):
            for kind, name in _DECLARED.findall(path.read_text()):
                names |= exposed(kind, name)
    return names


def from_integrations() -> set[str]:
    """FastStream's Kafka middleware (common.broker: prefix ``sluice``) and Litestar's
    Prometheus middleware (common.http: prefix ``sluice_http``)."""
    from faststream.prometheus.container import MetricsContainer
    from litestar.plugins.prometheus import middleware
    from prometheus_client import CollectorRegistry

    assert 'metrics_prefix="sluice"' in (ROOT / "libs" / "common" / "broker.py").read_text()
    assert 'prefix="sluice_http"' in (ROOT / "libs" / "common" / "http.py").read_text()
    registry = CollectorRegistry()
    MetricsContainer(registry, metrics_prefix="sluice", custom_label_names=[])
    names = {n for family in registry.collect() for n in exposed(family.type, family.name)}
    suffixes = re.findall(r"\{self\._config\.prefix\}_(\w+)", inspect.getsource(middleware))
    assert "requests_total" in suffixes and "request_duration_seconds" in suffixes
    kinds = {"requests_total": "counter", "requests_error_total": "counter"}
    for suffix in suffixes:
        kind = kinds.get(suffix, "histogram" if suffix.endswith("_seconds") else "gauge")
        names |= exposed(kind, "sluice_http_" + suffix)
    return names


def from_jmx_exporter() -> set[str]:
    """The names the brokers' JMX exporter configuration gives its MBeans: each rule's ``name``
    with ``$1`` each alternative of its pattern's first group, lower-cased as configured."""
    config = yaml.safe_load(JMX_EXPORTER.read_text())
    assert config["lowercaseOutputName"] is True
    names = set()
    for rule in config["rules"]:
        first = re.search(r"\(([\w|]+)\)", rule["pattern"])
        assert first, rule
        names |= {rule["name"].replace("$1", alt).lower() for alt in first.group(1).split("|")}
    return names


def rules(files: tuple[Path, ...] = RULE_FILES) -> list[dict[str, Any]]:
    return [
        rule for f in files for group in yaml.safe_load(f.read_text())["groups"] for rule in group["rules"]
    ]


def selectors(node: Any) -> Iterator[str]:
    """Every metric name an expression selects, through the whole tree."""
    if isinstance(node, promql_parser.VectorSelector):
        if node.name:
            yield node.name
        else:  # {__name__="..."}
            yield from (m.value for m in node.matchers.matchers if m.name == "__name__")
        return
    if isinstance(node, promql_parser.MatrixSelector):
        yield from selectors(node.vector_selector)
        return
    for attr in ("lhs", "rhs", "expr", "param"):
        child = getattr(node, attr, None)
        if child is not None:
            yield from selectors(child)
    for arg in getattr(node, "args", None) or ():
        yield from selectors(arg)


def anchors() -> set[str]:
    found = set()
    for heading in re.findall(r"^#{1,6} (.+)$", RUNBOOKS.read_text(), re.M):
        explicit = re.search(r"\{#([\w-]+)\}\s*$", heading)
        found.add(explicit.group(1) if explicit else slugify(heading.strip(), "-"))
    return found


def test_prometheus_loads_the_rules_file() -> None:
    config = yaml.safe_load((ROOT / "deploy" / "prometheus.yml").read_text())
    loaded = {(ROOT / "deploy" / f).resolve() for f in config["rule_files"]}
    assert RULES.resolve() in loaded


def test_every_expression_parses_and_names_exported_metrics() -> None:
    known = declared_in_code() | from_integrations() | from_jmx_exporter() | set().union(*EXTERNAL.values())
    unknown: dict[str, set[str]] = {}
    for rule in rules():
        tree = promql_parser.parse(rule["expr"])  # raises ValueError on a syntax error
        names = set(selectors(tree))
        assert names, rule["alert"]
        if names - known:
            unknown[rule["alert"]] = names - known
    assert not unknown, f"metrics nobody exports: {unknown}"


def test_the_suites_own_metrics_are_found_in_the_code() -> None:
    """The scan above is not vacuous: it finds the names the rules rely on most."""
    code = declared_in_code()
    assert {
        "sluice_consumer_lag",
        "sluice_dead_letters_total",
        "sluice_admission_shed_total",
        "sluice_gateway_unavailable_total",
        "sluice_database_writable_hosts",
    } <= code
    assert "sluice_received_messages_total" in from_integrations()


def test_a_syntax_error_is_caught() -> None:
    with pytest.raises(ValueError):
        promql_parser.parse("sum(rate(sluice_dead_letters_total[5m])")


def test_every_alert_has_severity_summary_and_a_runbook() -> None:
    targets = anchors()
    for file in RULE_FILES:  # the CloudNativePG file reuses the PostgreSQL alerts' names
        names = [rule["alert"] for rule in rules((file,))]
        assert len(names) == len(set(names)), names
    for rule in rules():
        assert rule["labels"]["severity"] in ("critical", "warning"), rule["alert"]
        notes = rule["annotations"]
        assert notes["summary"] and notes["description"], rule["alert"]
        path, _, anchor = notes["runbook_url"].partition("#")
        assert path == "docs/operations/runbooks.md", rule["alert"]
        assert anchor in targets, f"{rule['alert']}: no heading #{anchor} in {RUNBOOKS.name}"


def test_every_watched_metric_has_its_alert() -> None:
    """Consumer lag, unanswered requests, shed rate, dead letters, unanchored journal entries,
    replication lag, a service not ready; the brokers' partitions, an expiring certificate, a
    failed Job, WAL archiving and base backups on CloudNativePG."""
    watched: dict[str, set[str]] = {}
    for rule in rules():  # an alert of both files: the metrics of both expressions
        watched.setdefault(rule["alert"], set()).update(selectors(promql_parser.parse(rule["expr"])))
    wanted = {
        "sluice_consumer_lag": "SluiceConsumerLag",
        "sluice_gateway_unavailable_total": "SluiceUnansweredRequests",
        "sluice_admission_shed_total": "SluiceShedding",
        "sluice_dead_letters_total": "SluiceDeadLetters",
        "sluice_journal_unanchored_seconds": "SluiceJournalUnanchored",
        "pg_stat_replication_pg_wal_lsn_diff": "SluicePostgresReplicationLag",
        "up": "SluiceServiceDown",
        "kube_deployment_status_replicas_unavailable": "SluiceServiceNotReady",
        "kafka_server_replicamanager_underreplicatedpartitions": "SluiceKafkaUnderReplicatedPartitions",
        "kafka_server_replicamanager_underminisrpartitioncount": "SluiceKafkaUnderMinIsr",
        "kafka_controller_kafkacontroller_offlinepartitionscount": "SluiceKafkaOfflinePartitions",
        "certmanager_certificate_expiration_timestamp_seconds": "SluiceCertificateExpiring",
        "kube_job_status_failed": "SluiceJobFailed",
        "cnpg_pg_stat_archiver_last_failed_time": "SluicePostgresWalArchivingFailing",
        "barman_cloud_cloudnative_pg_io_last_failed_backup_timestamp": "SluicePostgresBackupFailing",
        "cnpg_collector_up": "SluicePostgresDown",
    }
    for metric, alert in wanted.items():
        assert metric in watched[alert], alert

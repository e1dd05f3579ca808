"""Prometheus on Kubernetes (docs/operations/runbooks.md, "On Kubernetes"): the rendered overlays
carry a PodMonitor per service on the port its /metrics is served on (the gateway's own metrics
port, never the partner port), whose `job` is the service's name as the rules expect, and the
alert rules of deploy/prometheus/alerts.yml as PrometheusRules, rule for rule, every expression
parsed by promql-parser; the cloudnative-pg overlay replaces the postgres_exporter rules with
alerts-cloudnative-pg.yml's and monitors the Cluster's instances with a PodMonitor of its own.
The kinds are checked against the Prometheus Operator's CRD schemas in test_k8s_manifests."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import promql_parser
import pytest
import yaml

from tests.support.k8s import SERVICES, generator, render

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
RULES = ROOT / "deploy" / "prometheus"
GEN = generator()


def _groups(file: str) -> list[dict[str, Any]]:
    groups: list[dict[str, Any]] = yaml.safe_load((RULES / file).read_text())["groups"]
    return groups


def _of(docs: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == kind}


def scrape_problems(docs: list[dict[str, Any]]) -> list[str]:
    """Each service scraped on its metrics port, its series labelled job=<service>."""
    monitors, deployments = _of(docs, "PodMonitor"), _of(docs, "Deployment")
    out = []
    for name in SERVICES:
        monitor = monitors.get(f"sluice-{name}")
        if monitor is None:
            out.append(f"{name}: no PodMonitor")
            continue
        pod = deployments[f"sluice-{name}"]["spec"]["template"]
        ports = {p["name"]: p["containerPort"] for c in pod["spec"]["containers"] for p in c["ports"]}
        [endpoint] = monitor["spec"]["podMetricsEndpoints"]
        if ports.get(endpoint["port"]) != GEN.METRICS_PORTS.get(name, GEN.SERVICES[name][0]):
            out.append(f"{name}: scraped on {endpoint['port']}, not its metrics port")
        if monitor["spec"]["selector"]["matchLabels"].items() > pod["metadata"]["labels"].items():
            out.append(f"{name}: the PodMonitor selects none of its pods")
        job = pod["metadata"]["labels"].get(monitor["spec"].get("jobLabel", ""))
        if job != name:
            out.append(f"{name}: its series would carry job={job or 'sluice/sluice-' + name}")
    return out


@pytest.fixture(scope="module")
def production() -> list[dict[str, Any]]:
    return render(K8S / "overlays" / "production")


@pytest.fixture(scope="module")
def cloudnative_pg() -> list[dict[str, Any]]:
    return render(K8S / "overlays" / "cloudnative-pg")


def test_every_service_is_scraped_on_its_metrics_port_as_the_rules_name_it(
    production: list[dict[str, Any]], cloudnative_pg: list[dict[str, Any]]
) -> None:
    assert scrape_problems(production) == []
    assert scrape_problems(cloudnative_pg) == []
    [up] = [r["expr"] for g in _groups("alerts.yml") for r in g["rules"] if r["alert"] == "SluiceServiceDown"]
    jobs = re.search(r'job=~"([^"]+)"', up)
    assert jobs and set(jobs.group(1).split("|")) == set(SERVICES)


def test_the_scrape_check_fails_on_a_monitor_of_the_partner_port(production: list[dict[str, Any]]) -> None:
    docs = [d for d in production if d["kind"] != "PodMonitor" or d["metadata"]["name"] != "sluice-admin"]
    broken = [
        {**d, "spec": {**d["spec"], "podMetricsEndpoints": [{"port": "http"}], "jobLabel": "app"}}
        if d["kind"] == "PodMonitor" and d["metadata"]["name"] == "sluice-gateway"
        else d
        for d in docs
    ]
    assert scrape_problems(broken) == [
        "gateway: scraped on http, not its metrics port",
        "gateway: its series would carry job=sluice/sluice-gateway",
        "admin: no PodMonitor",
    ]


def _rules(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for d in _of(docs, "PrometheusRule").values() for g in d["spec"]["groups"] for r in g["rules"]]


def test_the_prometheus_rules_are_alerts_yml_rule_for_rule(
    production: list[dict[str, Any]], cloudnative_pg: list[dict[str, Any]]
) -> None:
    alerts = [r for g in _groups("alerts.yml") for r in g["rules"]]
    assert sorted(_rules(production), key=repr) == sorted(alerts, key=repr)
    exporter = [
        r for g in _groups("alerts.yml") if g["name"] == GEN.POSTGRES_EXPORTER_GROUP for r in g["rules"]
    ]
    assert exporter and all(r["expr"].count("pg_") for r in exporter)
    cnpg = [r for g in _groups("alerts-cloudnative-pg.yml") for r in g["rules"]]
    wanted = [r for r in alerts if r not in exporter] + cnpg
    assert sorted(_rules(cloudnative_pg), key=repr) == sorted(wanted, key=repr)
    # the CloudNativePG variants keep the alerts' names, and so their runbooks
    assert {r["alert"] for r in exporter} <= {r["alert"] for r in cnpg}


def test_every_expression_of_the_overlays_parses(
    production: list[dict[str, Any]], cloudnative_pg: list[dict[str, Any]]
) -> None:
    for rule in _rules(production) + _rules(cloudnative_pg):
        promql_parser.parse(rule["expr"])  # raises ValueError on a syntax error


def test_the_cluster_is_scraped_by_a_pod_monitor_of_its_own(cloudnative_pg: list[dict[str, Any]]) -> None:
    [cluster] = _of(cloudnative_pg, "Cluster").values()
    monitor = _of(cloudnative_pg, "PodMonitor")[cluster["metadata"]["name"]]
    assert monitor["spec"]["selector"]["matchLabels"] == {"cnpg.io/cluster": cluster["metadata"]["name"]}
    assert monitor["spec"]["podMetricsEndpoints"][0]["port"] == "metrics"
    assert not cluster["spec"].get("monitoring", {}).get("enablePodMonitor")  # deprecated in 1.30
    assert "sluice-postgres-exporter-alerts" not in _of(cloudnative_pg, "PrometheusRule")


def test_the_overlays_monitoring_file_is_what_the_generator_writes() -> None:
    on_disk = list(yaml.safe_load_all((K8S / "overlays" / "cloudnative-pg" / "monitoring.yaml").read_text()))
    assert on_disk == GEN.cnpg_monitoring()

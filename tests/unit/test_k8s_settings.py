"""A first production install comes up (docs/operations/deploy.md, "Required inputs"): every
Deployment of the base and of the production and cloudnative-pg overlays, rendered with the
operator's inputs, starts its settings as its pod would get them (the ConfigMap, the
container's env, its Secret's items as files in SLUICE_SECRETS_DIR) through the loader its
``__main__`` calls, and the ledger's start check of its anchor keys; without the inputs the
production overlays refuse to render, naming each."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from unittest import mock

import pytest

from common.settings import Settings, load_settings
from common.topics import Topics
from ledger.app import _anchors
from tests.support.k8s import K8S, generator, input_values, render, secret_value

pytestmark = pytest.mark.unit

GEN = generator()
OVERLAYS = {
    "base": K8S / "base",
    **{n: K8S / "overlays" / n for n in ("production", "cloudnative-pg", "strimzi")},
}


def pod_environment(
    docs: list[dict[str, Any]], deployment: dict[str, Any], secrets_dir: Path
) -> dict[str, str]:
    """The environment of the Deployment's container, its Secret's items written as the files
    its volume would hold, SLUICE_SECRETS_DIR pointed at them."""
    configs = {d["metadata"]["name"]: d.get("data", {}) for d in docs if d["kind"] == "ConfigMap"}
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        env.update(configs[source["configMapRef"]["name"]])
    env.update({e["name"]: e["value"] for e in container.get("env", []) if "value" in e})
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    for volume in pod["volumes"]:
        if mounts.get(volume["name"]) != env["SLUICE_SECRETS_DIR"]:
            continue
        for secret, items in secret_sources(volume):
            for item in items:
                (secrets_dir / item["path"]).write_text(secret_value(secret, item["key"]) + "\n")
    return {**env, "SLUICE_SECRETS_DIR": str(secrets_dir)}


def secret_sources(volume: dict[str, Any]) -> list[tuple[str, list[dict[str, str]]]]:
    """(Secret, items) of a secret volume, or of each Secret a projected volume gathers (the
    strimzi overlay's: the pod's own Secret and its KafkaUser's)."""
    if "secret" in volume:
        return [(volume["secret"]["secretName"], volume["secret"]["items"])]
    sources = volume.get("projected", {}).get("sources", [])
    return [(s["secret"]["name"], s["secret"]["items"]) for s in sources if "secret" in s]


def start(service: str, env: dict[str, str]) -> Settings:
    """What ``python -m <service>`` does with its settings before it serves."""
    with mock.patch.dict(os.environ, env, clear=True):
        settings = load_settings(service)
    if service == "ledger":  # its anchors: the keys are required in production
        _anchors(settings, SimpleNamespace(sessions=None, topics=Topics(), broker=None))  # type: ignore[arg-type]
    return settings


def deployments(overlay: str) -> list[tuple[list[dict[str, Any]], dict[str, Any]]]:
    docs = render(OVERLAYS[overlay])
    if overlay == "base":  # the base is what the overlays build on: their inputs merged as they merge them
        (config,) = [d for d in docs if d["kind"] == "ConfigMap"]
        config["data"].update(input_values())
    return [(docs, d) for d in docs if d["kind"] == "Deployment"]


def what_stops(service: str, env: dict[str, str], caplog: pytest.LogCaptureFixture) -> str | None:
    """Why ``service`` would not serve as it should with ``env``: its exit, or a setting that
    would start it wrong."""
    caplog.clear()
    try:
        settings = start(service, env)
    except SystemExit as exc:
        refused = [r.getMessage() for r in caplog.records if r.levelno >= logging.CRITICAL]
        return f"{service} exits {exc.code}: {refused}"
    if service == "gateway" and settings.public_base_url != input_values()["SLUICE_PUBLIC_BASE_URL"]:
        return f"gateway links to {settings.public_base_url}"
    if service in ("gateway", "admin") and not settings.trusted_networks:
        return f"{service} takes the ingress for every client (SLUICE_TRUSTED_PROXIES empty)"
    return None


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_deployment_loads_its_settings_as_its_pod_gets_them(
    overlay: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    found, stopped = [], []
    for docs, deployment in deployments(overlay):
        service = deployment["metadata"]["labels"]["app.kubernetes.io/name"]
        (tmp_path / service).mkdir()
        reason = what_stops(service, pod_environment(docs, deployment, tmp_path / service), caplog)
        stopped += [reason] if reason else []
        found.append(service)
    assert stopped == [], "\n".join(stopped)
    assert sorted(found) == sorted(GEN.SERVICES)


@pytest.mark.parametrize("overlay", ["production", "cloudnative-pg", "strimzi"])
@pytest.mark.parametrize("given", ["none", "one empty"])
def test_a_production_overlay_without_its_inputs_is_not_rendered(
    overlay: str, given: str, tmp_path: Path
) -> None:
    values = dict(input_values())
    missing = list(values) if given == "none" else ["SLUICE_TRUSTED_PROXIES"]
    for name in missing:
        values[name] = ""
    inputs = tmp_path / "inputs.env"
    inputs.write_text("".join(f"{k}={v}\n" for k, v in values.items() if given != "none"))
    with pytest.raises(SystemExit) as refused:
        GEN.main(["render", overlay, "--inputs", str(inputs)])
    message = str(refused.value.code)
    assert [name for name in GEN.INPUTS if name in message] == missing, message


def test_an_overlay_without_its_inputs_file_names_every_input(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as refused:
        GEN.render(K8S / "overlays" / "production", tmp_path / "inputs.env")
    message = str(refused.value.code)
    assert "not found" in message
    assert all(name in message for name in GEN.INPUTS), message


def test_the_public_address_must_be_https(tmp_path: Path) -> None:
    inputs = tmp_path / "inputs.env"
    values = {**input_values(), "SLUICE_PUBLIC_BASE_URL": "http://127.0.0.1:8000"}
    inputs.write_text("".join(f"{k}={v}\n" for k, v in values.items()))
    with pytest.raises(SystemExit, match="SLUICE_PUBLIC_BASE_URL"):
        GEN.render(K8S / "overlays" / "production", inputs)


def test_on_strimzi_each_service_logs_in_as_its_kafka_user(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The strimzi overlay's pods, as their settings load: Strimzi's bootstrap Service on its TLS
    listener, SCRAM-SHA-512 as the service's own KafkaUser with the password the User Operator
    wrote in that user's Secret, and the CA file where the cluster CA's ca.crt is mounted."""
    seen = []
    for docs, deployment in deployments("strimzi"):
        service = deployment["metadata"]["labels"]["app.kubernetes.io/name"]
        (tmp_path / service).mkdir()
        settings = start(service, pod_environment(docs, deployment, tmp_path / service))
        assert settings.kafka_bootstrap == "sluice-kafka-kafka-bootstrap:9093"
        assert (settings.kafka_security_protocol, settings.kafka_sasl_mechanism) == (
            "SASL_SSL",
            "SCRAM-SHA-512",
        )
        assert settings.kafka_sasl_username == service
        users = [d for d in docs if d["kind"] == "KafkaUser" and d["metadata"]["name"] == service]
        assert users, f"no KafkaUser {service}"
        assert settings.kafka_sasl_password.get_secret_value() == secret_value(
            f"sluice-kafka-user-{service}", "password"
        )
        pod = deployment["spec"]["template"]["spec"]
        (mount,) = [
            m
            for m in pod["containers"][0]["volumeMounts"]
            if settings.kafka_ssl_cafile.startswith(m["mountPath"] + "/")
        ]
        (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
        assert volume["secret"]["secretName"] == "sluice-kafka-cluster-ca-cert"
        assert {"key": "ca.crt", "path": settings.kafka_ssl_cafile.rsplit("/", 1)[1]} in volume["secret"][
            "items"
        ]
        seen.append(service)
    assert sorted(seen) == sorted(GEN.SERVICES)

"""Secure by default (docs/security.md, "Kafka over TLS"): deploy/k8s sent SASL/PLAIN passwords
in clear. Now no listener and no client uses PLAINTEXT or SASL_PLAINTEXT; every client (the five
services, the ACL Job, KEDA) logs in with SCRAM-SHA-512 over SASL_SSL and checks the brokers
against a CA file that a volume mounts; the brokers' keystore comes from the TLS Secret; the
SCRAM Job gives a credential to every principal of common.acls, reading each password from a
mounted file; every name dialed over TLS is one the certificate must carry (and the operations
guide lists)."""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from common import acls
from tests.support.k8s import generator, render

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
GEN = generator()
IN_CLEAR = {"PLAINTEXT", "SASL_PLAINTEXT"}


@pytest.fixture(scope="module", params=["base", "overlays/production"])
def docs(request: pytest.FixtureRequest) -> list[dict[str, Any]]:
    rendered: list[dict[str, Any]] = render(K8S / request.param)
    return rendered


def _one(docs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    [found] = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    return found


def _env(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in container.get("env", []) if "value" in e}


def _broker(docs: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any], dict[str, str]]:
    pod = _one(docs, "StatefulSet", "kafka")["spec"]["template"]["spec"]
    [container] = pod["containers"]
    return pod, container, _env(container)


def _advertised(container: dict[str, Any]) -> list[tuple[str, str, int]]:
    """(listener, host, port) of every address the node advertises (its start command sets them)."""
    script = " ".join(container.get("command", []) + container.get("args", []))
    [value] = re.findall(r'KAFKA_ADVERTISED_LISTENERS="([^"]+)"', script)
    host = re.search(r'host="([^"]+)"', script)
    out = []
    for entry in value.split(","):
        name, address = entry.split("://")
        h, port = address.rsplit(":", 1)
        out.append((name, h.replace("${host}", host.group(1) if host else "${host}"), int(port)))
    return out


def _mounted_file(pod: dict[str, Any], container: dict[str, Any], path: str) -> tuple[str, str]:
    """(Secret name, key) of the file ``path`` in ``container``, from a mounted secret volume."""
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    for mount in container.get("volumeMounts", []):
        rel = PurePosixPath(path)
        base = PurePosixPath(mount["mountPath"])
        if base not in rel.parents:
            continue
        volume = volumes[mount["name"]]
        sources = (
            [volume["secret"] | {"name": volume["secret"]["secretName"]}]
            if "secret" in volume
            else [s["secret"] for s in volume.get("projected", {}).get("sources", []) if "secret" in s]
        )
        for source in sources:
            for item in source.get("items", []):
                if PurePosixPath(base, item["path"]) == rel:
                    return source["name"], item["key"]
    raise AssertionError(f"{container['name']}: no mounted secret file at {path}")


def test_no_listener_is_in_clear_and_the_client_listener_takes_scram_sha_512_alone(
    docs: list[dict[str, Any]],
) -> None:
    _, container, env = _broker(docs)
    protocols = dict(x.split(":") for x in env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"].split(","))
    listeners = [x.split("://")[0] for x in env["KAFKA_LISTENERS"].split(",")]
    advertised = _advertised(container)
    for name in listeners + [n for n, _, _ in advertised]:
        assert protocols.get(name) == "SASL_SSL", f"listener {name} is {protocols.get(name)}"
    assert not IN_CLEAR & set(protocols.values())
    assert env["KAFKA_CONTROLLER_LISTENER_NAMES"] in listeners
    assert env["KAFKA_INTER_BROKER_LISTENER_NAME"] in listeners
    # the listener behind the clients' Service takes SCRAM-SHA-512 and nothing else
    service_port = _one(docs, "Service", "kafka")["spec"]["ports"][0]["port"]
    [client] = [n for n, _, port in advertised if port == service_port]
    assert env[f"KAFKA_LISTENER_NAME_{client}_SASL_ENABLED_MECHANISMS"] == "SCRAM-SHA-512"
    # PLAIN, where the brokers keep it for their own principal, only ever travels over TLS
    assert env["KAFKA_SASL_MECHANISM_CONTROLLER_PROTOCOL"] in ("PLAIN", "SCRAM-SHA-512")
    assert "SSL://" not in " ".join(container["args"])  # the image's configure would want a JKS


def test_the_brokers_keystore_and_truststore_come_from_the_tls_secret(docs: list[dict[str, Any]]) -> None:
    pod, container, env = _broker(docs)
    assert env["KAFKA_SSL_KEYSTORE_TYPE"] == "PEM"
    assert env["KAFKA_SSL_TRUSTSTORE_TYPE"] == "PEM"
    assert env.get("KAFKA_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM", "https") == "https"
    tls = GEN.KAFKA_TLS_SECRET
    assert _mounted_file(pod, container, env["KAFKA_SSL_TRUSTSTORE_LOCATION"]) == (tls, "ca.crt")
    # the keystore file is assembled at start from the Secret's key and certificate chain
    script = container["args"][0]
    keystore = env["KAFKA_SSL_KEYSTORE_LOCATION"]
    [(key, cert)] = re.findall(rf"cat (\S+) (\S+) > {re.escape(keystore)}", script)
    assert _mounted_file(pod, container, key) == (tls, "tls.key")
    assert _mounted_file(pod, container, cert) == (tls, "tls.crt")
    # ... into memory, never the node's disk, and before the broker starts
    mount = next(
        m
        for m in container["volumeMounts"]
        if PurePosixPath(m["mountPath"]) in PurePosixPath(keystore).parents
    )
    volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
    assert volume["emptyDir"]["medium"] == "Memory"
    assert script.index(keystore) < script.index("exec /etc/kafka/docker/run")


def _clients(docs: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(name, pod, container) of every workload that logs in to Kafka as a principal."""
    out = []
    for doc in docs:
        if doc["kind"] not in ("Deployment", "Job"):
            continue
        pod = doc["spec"]["template"]["spec"]
        for c in pod["containers"]:
            if "SLUICE_KAFKA_SASL_USERNAME" in _env(c):
                out.append((doc["metadata"]["name"], pod, c))
    return out


def test_every_client_uses_scram_sha_512_over_tls_with_a_mounted_ca(docs: list[dict[str, Any]]) -> None:
    config = _one(docs, "ConfigMap", "sluice-config")["data"]
    clients = _clients(docs)
    names = {n for n, _, _ in clients}
    assert names == {f"sluice-{s}" for s in acls.SERVICES} | {GEN.job_name("kafka-acls")}
    for name, pod, c in clients:
        refs = [r["configMapRef"]["name"] for r in c.get("envFrom", []) if "configMapRef" in r]
        env = {k: v for r in refs for k, v in _one(docs, "ConfigMap", r)["data"].items()} | _env(c)
        assert env["SLUICE_KAFKA_SECURITY_PROTOCOL"] == "SASL_SSL", name
        assert env["SLUICE_KAFKA_SASL_MECHANISM"] == "SCRAM-SHA-512", name
        assert _mounted_file(pod, c, env["SLUICE_KAFKA_SSL_CAFILE"]) == (GEN.KAFKA_TLS_SECRET, "ca.crt"), name
    assert config["SLUICE_KAFKA_SECURITY_PROTOCOL"] not in IN_CLEAR


def test_keda_logs_in_with_scram_sha_512_over_tls(docs: list[dict[str, Any]]) -> None:
    auth = _one(docs, "TriggerAuthentication", "sluice-keda-kafka")["spec"]["secretTargetRef"]
    params = {r["parameter"] for r in auth}
    assert {"sasl", "tls", "ca", "username", "password"} <= params
    for scaled in (d for d in docs if d["kind"] == "ScaledObject"):
        for trigger in scaled["spec"]["triggers"]:
            meta = trigger["metadata"]
            assert trigger["authenticationRef"]["name"] == "sluice-keda-kafka"
            assert meta.get("sasl", "scram_sha512") == "scram_sha512"
            assert meta.get("tls", "enable") == "enable"


def test_the_scram_job_gives_every_principal_a_credential_from_a_mounted_file(
    docs: list[dict[str, Any]],
) -> None:
    job = _one(docs, "Job", GEN.job_name("kafka-scram"))
    pod = job["spec"]["template"]["spec"]
    [c] = pod["containers"]
    script = c["args"][0]
    [users] = set(re.findall(r"for user in ([^;]+); do", script))  # checked, then given each
    principals = {p.removeprefix("User:") for p in acls.plan()}
    assert principals <= set(users.split()), "a principal of common.acls has no SCRAM credential"
    assert GEN.KAFKA_BROKER_USER in users.split()  # the ACL Job logs in with SCRAM too
    assert "SCRAM-SHA-512=" in script and "--add-config-file" in script
    [directory] = set(re.findall(r'"\$\(props "([^"$]+)/\$user"\)"', script))
    for user in users.split():
        secret, key = _mounted_file(pod, c, f"{directory}/{user}")
        if user == GEN.KAFKA_SCALER_USER:
            assert (secret, key) == ("sluice-keda-kafka", "password")  # what KEDA logs in with
        else:
            owner = "kafka-acls" if user == GEN.KAFKA_BROKER_USER else user  # each in its own pod's Secret
            assert (secret, key) == (GEN.secret_name(owner), f"SLUICE_KAFKA_SASL_PASSWORD_{user.upper()}")
    # never on a command line, in the environment or echoed
    assert "--add-config " not in script and "set -x" not in script
    assert not [e for e in c.get("env", []) if "valueFrom" in e or "PASSWORD" in e["name"]]
    # it logs in as the brokers' principal over TLS, checking the brokers against the CA
    assert "security.protocol=SASL_SSL" in script
    [ca] = re.findall(r"ssl\.truststore\.location=(\S+?)'", script)
    assert _mounted_file(pod, c, ca) == (GEN.KAFKA_TLS_SECRET, "ca.crt")


def test_every_name_dialed_over_tls_is_in_the_certificates_names(docs: list[dict[str, Any]]) -> None:
    _, container, env = _broker(docs)
    dialed = {h for _, h, _ in _advertised(container)}
    dialed |= {v.split("@")[1].rsplit(":", 1)[0] for v in env["KAFKA_CONTROLLER_QUORUM_VOTERS"].split(",")}
    config = _one(docs, "ConfigMap", "sluice-config")["data"]
    dialed |= {a.rsplit(":", 1)[0] for a in config["SLUICE_KAFKA_BOOTSTRAP"].split(",")}
    for scaled in (d for d in docs if d["kind"] == "ScaledObject"):
        for trigger in scaled["spec"]["triggers"]:
            dialed |= {a.rsplit(":", 1)[0] for a in trigger["metadata"]["bootstrapServers"].split(",")}
    scram = _env(_one(docs, "Job", GEN.job_name("kafka-scram"))["spec"]["template"]["spec"]["containers"][0])
    dialed |= {a.rsplit(":", 1)[0] for a in scram["KAFKA_BOOTSTRAP"].split(",")}
    resolved = {h.replace("${HOSTNAME}", f"kafka-{i}") for h in dialed for i in range(GEN.KAFKA_NODES)}
    assert resolved <= set(GEN.KAFKA_TLS_DNS_NAMES)
    guide = (ROOT / "docs" / "operations.md").read_text()
    assert [n for n in GEN.KAFKA_TLS_DNS_NAMES if f"`{n}`" not in guide] == []


def _selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """A label selector (matchLabels, matchExpressions In/NotIn/Exists) applied to ``labels``."""
    if any(labels.get(k) != v for k, v in selector.get("matchLabels", {}).items()):
        return False
    for e in selector.get("matchExpressions", []):
        value = labels.get(e["key"])
        if e["operator"] == "In" and value not in e["values"]:
            return False
        if e["operator"] == "NotIn" and value in e["values"]:
            return False
        if e["operator"] == "Exists" and value is None:
            return False
    return True


def _admitted(docs: list[dict[str, Any]], port: int) -> list[dict[str, Any]]:
    """The peers that may reach the brokers' ``port`` (an empty peer: anyone)."""
    kafka = _one(docs, "StatefulSet", "kafka")["spec"]["template"]["metadata"]["labels"]
    peers: list[dict[str, Any]] = []
    for policy in (d for d in docs if d["kind"] == "NetworkPolicy"):
        if not _selects(policy["spec"]["podSelector"], kafka):
            continue
        for rule in policy["spec"].get("ingress", []):
            if "ports" not in rule or any(p["port"] == port for p in rule["ports"]):
                peers += rule.get("from", [{}])
    return peers


def _names(peers: list[dict[str, Any]]) -> set[str | None]:
    return {p.get("podSelector", {}).get("matchLabels", {}).get("app.kubernetes.io/name") for p in peers}


def test_only_the_brokers_and_the_scram_job_reach_the_brokers_own_listeners(
    docs: list[dict[str, Any]],
) -> None:
    """The PLAIN listeners (INTERNAL, CONTROLLER) are the brokers' own: a service's pod may not
    even try a login there; the CLIENT listener takes the suite and KEDA's operator."""
    ports = GEN.KAFKA_PORTS
    assert _names(_admitted(docs, ports["CONTROLLER"])) == {"kafka"}
    assert _names(_admitted(docs, ports["INTERNAL"])) == {"kafka", "kafka-scram"}
    client = _admitted(docs, ports["CLIENT"])
    spaces = {
        p.get("namespaceSelector", {}).get("matchLabels", {}).get("kubernetes.io/metadata.name")
        for p in client
    }
    assert GEN.KEDA_NAMESPACE in spaces  # KEDA's scaler dials from its own namespace
    assert {} not in client  # not from anywhere

"""Writes deploy/k8s/base/*.yaml (the kustomize base) from one table of services, and renders
an overlay (base + its strategic-merge patches, merged by kind and name, lists of named items
merged by name) into one document stream, as ``kustomize build`` would, for environments
without the kustomize binary (``python deploy/k8s/generate.py render production``).

Resource figures come from measurement (docs/performance): peak RSS under load 110-140 MB
per service, CPU per request 0.5-1.5 ms; requests are set at the idle figure, limits at about
twice the peak.

What checkov's Kubernetes checks ask for (``make lint`` runs them on the base and the rendered
production overlay) is done here; where a check cannot be met, the resource carries a
``checkov.io/skip<N>: CKV_K8S_xx=<reason>`` annotation saying why (``_skips``).
"""

from __future__ import annotations

import copy
import re
import sys
import tomllib
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
NAMESPACE = "sluice"  # every resource's; never the default namespace (checkov CKV_K8S_21)
# This checkout's release (pyproject.toml), never ``latest``. The digest exists only once the
# release image is built and pushed: a deployment pins it in its overlay (``images:``, render).
IMAGE_NAME = "ghcr.io/sluice/sluice"
VERSION = tomllib.loads((HERE.parents[1] / "pyproject.toml").read_text())["project"]["version"]
IMAGE = f"{IMAGE_NAME}:{VERSION}"
# The release's Jobs (migrate, kafka-scram, kafka-acls): a Job's pod template cannot be changed
# once created, so each release's are new objects, named after the release, deleted a day after
# they finish (JOB_TTL_SECONDS), run before the Deployments roll: Argo CD's Sync hooks in earlier
# sync waves, or `kubectl apply -k` in two steps (docs/operations/upgrade.md, "The release's Jobs").
JOB_TTL_SECONDS = 86400  # a day to read a finished Job's log; then the next apply may run it again
SERVER_WAVE = 3  # the Deployments and their autoscalers, after every Job below has completed
JOB_WAVES = {"kafka-scram": 1, "kafka-acls": 2, "migrate": 2}  # credentials before topics and ACLs
PARTITIONS = 6  # SLUICE_KAFKA_TOPIC_PARTITIONS: the most consumers a group can use
PRESTOP_S = 5  # serving on after the pod is marked terminating (deployment)
# The topics are the operator's: the Job sluice-kafka-acls creates them (python -m sluice topics)
# with three replicas, two of them in sync before a write is acknowledged, so one broker lost
# loses nothing; the services never create one (they wait for them at start).
KAFKA_TOPIC_SETTINGS = {
    "SLUICE_KAFKA_REPLICATION_FACTOR": "3",
    "SLUICE_KAFKA_MIN_INSYNC_REPLICAS": "2",
    "SLUICE_KAFKA_CREATE_TOPICS": "false",
}
SERVICES = {  # name: (port, http: takes outside traffic, consumer group topic or None)
    "gateway": (8000, True, None),
    "admin": (8001, True, None),
    "ledger": (8011, False, "sluice.ledger.commands"),
    "compliance": (8012, False, "sluice.compliance.commands"),
    "webhooks": (8013, False, "sluice.events"),
}
# Every consumer group a KEDA-scaled service reads with, and its topic (the services' app.py,
# common.acls.CONSUMERS): KEDA scales on the largest lag among them, so a backlog on any (reads,
# releases, usage, webhook commands) adds consumers, not only the main commands' topic.
CONSUMER_GROUPS = {
    "ledger": {"sluice-ledger": "sluice.ledger.commands", "sluice-ledger-reads": "sluice.ledger.reads"},
    "compliance": {
        "sluice-compliance": "sluice.compliance.commands",
        "sluice-compliance-releases": "sluice.compliance.releases",
        "sluice-compliance-usage": "sluice.events",
    },
    "webhooks": {"sluice-webhooks": "sluice.events", "sluice-webhooks-commands": "sluice.webhooks.commands"},
}
# At least two of every Deployment, so that a drain (PodDisruptionBudget maxUnavailable 1) always
# has one left and never waits; the HPA and KEDA own the count from there (no `replicas` field).
MIN_REPLICAS = 2
# The most pods of each service, so that their connection pools (SLUICE_DB_POOL_SIZE, 10, and as
# many overflow: common.db) fit PostgreSQL's max_connections, DATABASE_MAX_CONNECTIONS: 18 pods at
# 20 connections, the migration Job's 20, the server's reserved 3 and CloudNativePG's own 10 come
# to 393 of 400 (tests/unit/test_k8s_budgets.py; docs/operations.md, "Connection budget"). More
# consumers than a topic's partitions would idle anyway; raise these with max_connections.
MAX_REPLICAS = {"gateway": 6, "admin": 2, "ledger": 4, "compliance": 3, "webhooks": 3}
# max_connections of the PostgreSQL the base expects (your own server's, or the overlay's Cluster's
# parameter, which tests/unit/test_k8s_budgets.py reads instead)
DATABASE_MAX_CONNECTIONS = 400
# Where the operators' tools run (admin takes traffic from there only) and Prometheus (it scrapes
# every service's /metrics): namespaces named by their kubernetes.io/metadata.name label.
OPERATORS_NAMESPACE = "sluice-operators"
MONITORING_NAMESPACE = "monitoring"
KEDA_NAMESPACE = "keda"  # KEDA's operator: its Kafka scaler reads the consumer groups' lag
# Services whose /metrics are off their main port (the gateway's faces partners, and metrics
# are never served there: docs/operations.md, "Metrics").
METRICS_PORTS = {"gateway": 8010}
SECRETS = [
    "SLUICE_ADMIN_TOKEN",
    "SLUICE_JWT_SECRET",
    "SLUICE_ONBOARDING_SECRET",
    "SLUICE_ENCRYPTION_KEYS",
    "SLUICE_JOURNAL_ANCHOR_KEY",
    "SLUICE_COMPLIANCE_SIGNING_KEY",
    "SLUICE_ADMIN_SIGNING_KEY",
    "SLUICE_LEDGER_SIGNING_KEY",
    "SLUICE_GATEWAY_CACHE_KEY",
]
# Each pod mounts the secrets its process uses and no other (docs/security.md, "Database roles
# and per-service secrets"; the table of common.settings.SERVICE_SECRETS,
# tests/unit/test_least_privilege.py), and its own database role's URL: its Secret's
# (secret_name) key SLUICE_DATABASE_URL_<ROLE> as the file SLUICE_DATABASE_URL
# (common.privileges: one role per service; the migration Job's is the migrations role).
POD_SECRETS = {
    "gateway": [
        "SLUICE_JWT_SECRET",
        "SLUICE_ONBOARDING_SECRET",
        "SLUICE_ENCRYPTION_KEYS",
        "SLUICE_GATEWAY_CACHE_KEY",  # the MAC on what it trusts from Valkey
    ],
    "admin": ["SLUICE_ADMIN_TOKEN", "SLUICE_JWT_SECRET", "SLUICE_ADMIN_SIGNING_KEY"],
    # signs the journal's anchors, and with a key of its own its releases and events (Ed25519)
    "ledger": ["SLUICE_JOURNAL_ANCHOR_KEY", "SLUICE_LEDGER_SIGNING_KEY"],
    "compliance": ["SLUICE_COMPLIANCE_SIGNING_KEY"],  # signs its decisions, which the ledger verifies
    "webhooks": ["SLUICE_ENCRYPTION_KEYS"],
    "migrate": [],
}
DATABASE_ROLE = {**{name: name for name in SERVICES}, "migrate": "migrations"}
# The read-write PostgreSQL endpoint the base expects (docs/operations/failover.md): each database
# URL in the pods' Secrets names this host
# (postgresql+asyncpg://sluice_ledger:...@sluice-database:5432/sluice), an ExternalName Service,
# so that an overlay points the suite at whatever runs PostgreSQL without touching the secrets: a
# server of your own behind the Service `postgres` (the default),
# CloudNativePG's `<cluster>-rw` (overlays/cloudnative-pg) or a managed database's endpoint.
DATABASE_SERVICE = "sluice-database"
DATABASE_TARGET = f"postgres.{NAMESPACE}.svc.cluster.local"  # your cluster's DNS domain
# Valkey (common.valkey_acl): only these pods use it, each as its own ACL user, its URL (with
# that user's password) its Secret's (secret_name) key SLUICE_REDIS_URL_<POD> mounted as the
# file SLUICE_REDIS_URL; the ConfigMap carries none, so the other pods have no Valkey URL. The
# Valkey server takes its users from an ACL file (the Secret sluice-valkey-acl, key users.acl,
# printed with hashed passwords by `python -m sluice valkey-acl`).
VALKEY_PODS = ("gateway", "admin")
# Each pod's Secret (secret_name) is mounted as files here, never passed as environment variables
# (checkov CKV_K8S_35): common.settings reads SLUICE_SECRETS_DIR's files named after settings.
SECRETS_DIR = "/run/secrets/sluice"
# Kafka over TLS with SASL/SCRAM-SHA-512 and ACLs (common.acls; docs/security.md, "Kafka over
# TLS": no password in clear): each service connects as its own principal, User:<service>, with
# its own password, its Secret's (secret_name) key SLUICE_KAFKA_SASL_PASSWORD_<SERVICE>
# mounted as the file SLUICE_KAFKA_SASL_PASSWORD (no pod sees another's), and checks the
# brokers' certificate against the CA of the Secret sluice-kafka-tls (its ca.crt alone is
# mounted: never tls.key). The Job
# sluice-kafka-scram turns those passwords into SCRAM credentials; the Job sluice-kafka-acls then
# creates every ACL as the brokers' own principal (the only super user).
KAFKA_SASL = {
    "SLUICE_KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
    "SLUICE_KAFKA_SASL_MECHANISM": "SCRAM-SHA-512",
}
KAFKA_BROKER_USER = "broker"  # tools.stack.kafka.BROKER_USER
KAFKA_SCALER_USER = "keda"  # common.acls.SCALER: KEDA's lag scaler
KAFKA_JAAS_DIR = "/etc/kafka/jaas"
# The brokers' certificate, its key and its CA, as cert-manager writes a Certificate's Secret
# (type kubernetes.io/tls: tls.crt, tls.key, ca.crt); cert-manager or the platform's operator
# provides it (docs/operations.md). Its names must cover KAFKA_TLS_DNS_NAMES.
KAFKA_TLS_SECRET = "sluice-kafka-tls"
KAFKA_TLS_DIR = "/etc/kafka/tls"  # the brokers' and the SCRAM Job's mount of it
KAFKA_CA_DIR = "/etc/sluice/kafka"  # the clients' mount: ca.crt alone
KAFKA_CA_FILE = f"{KAFKA_CA_DIR}/ca.crt"
UID = 10001  # the image's user (Dockerfile)
LABELS = {"app.kubernetes.io/part-of": "sluice"}
# The application image's tag is fixed, its digest is not known before CI builds it.
IMAGE_DIGEST_SKIP = (
    "CKV_K8S_43=ghcr.io/sluice/sluice is built from this repository's Dockerfile: its digest exists"
    " only once a release is built and pushed, so the base names the release tag and a deployment"
    " pins the digest in its overlay (images: digest, `kustomize edit set image`)"
)


# What no default can know: the inputs a production overlay takes from the operator, in the
# file its kustomization's configMapGenerator merges into sluice-config (inputs.env; copy
# inputs.env.example). `render` refuses an overlay without them, naming each (docs/operations/
# deploy.md, "Required inputs"); so does kustomize when the file is missing.
INPUTS = {
    "SLUICE_AUTHORITY_VERIFY_KEYS": "compliance's, admin's and the ledger's public keys"
    " (`python -m sluice keys`): empty, the ledger, compliance and webhooks exit 2",
    "SLUICE_JOURNAL_ANCHOR_VERIFY_KEYS": "the journal anchor key's public keys: empty, the ledger exits 2",
    "SLUICE_TRUSTED_PROXIES": "the ingress controller pods' CIDRs: empty, every client is the ingress"
    " and per-address limits become global",
    "SLUICE_PUBLIC_BASE_URL": "the gateway's public https:// address, which onboarding links name",
}


def _labels(name: str) -> dict[str, str]:
    return {**LABELS, "app.kubernetes.io/name": name}


def release_name(version: str = VERSION) -> str:
    """``version`` as a DNS label part: 0.1.0 -> 0-1-0."""
    return re.sub(r"[^a-z0-9]+", "-", version.lower()).strip("-")


def job_name(step: str, version: str = VERSION) -> str:
    """The Job of ``step`` in release ``version``: a new object per release (JOB_TTL_SECONDS)."""
    return f"sluice-{step}-{release_name(version)}"


def _job(step: str, pod: dict[str, Any], backoff: int, deadline: int, skip: str) -> dict[str, Any]:
    """A release's Job ``step``: ``backoff`` restarts within ``deadline`` seconds at most; an Argo
    CD Sync hook (never tracked as out of sync once deleted, replaced at the next sync) in its
    wave (JOB_WAVES), labelled with its release for `kubectl wait -l`."""
    labels = {
        **_labels(step),
        "app.kubernetes.io/component": "release-job",
        "app.kubernetes.io/version": VERSION,
    }
    annotations = {
        "argocd.argoproj.io/hook": "Sync",
        "argocd.argoproj.io/hook-delete-policy": "BeforeHookCreation",
        "argocd.argoproj.io/sync-wave": str(JOB_WAVES[step]),
        **_skips(skip),
    }
    spec = {
        "backoffLimit": backoff,
        "activeDeadlineSeconds": deadline,
        "ttlSecondsAfterFinished": JOB_TTL_SECONDS,
        "template": {"metadata": {"labels": _labels(step)}, "spec": pod},
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _meta(job_name(step), labels, annotations),
        "spec": spec,
    }


def _server(doc: dict[str, Any]) -> dict[str, Any]:
    """A Deployment or its autoscaler, applied after the release's Jobs (SERVER_WAVE; the label
    that `kubectl apply -l 'app.kubernetes.io/component!=server'` leaves out)."""
    doc["metadata"]["labels"] = {**doc["metadata"]["labels"], "app.kubernetes.io/component": "server"}
    annotations = doc["metadata"].setdefault("annotations", {})
    annotations["argocd.argoproj.io/sync-wave"] = str(SERVER_WAVE)
    return doc


def _skips(*reasons: str) -> dict[str, str]:
    """checkov's skip annotations: ``CKV_K8S_xx=why the check does not apply here``."""
    return {f"checkov.io/skip{i}": r for i, r in enumerate(reasons, 1)}


def _pod_security(uid: int) -> dict[str, Any]:
    """The pod's security context (checkov CKV_K8S_29): non-root, its own uid and group, the
    group owning mounted volumes (the secret files), the runtime's default seccomp profile."""
    return {
        "runAsNonRoot": True,
        "runAsUser": uid,
        "runAsGroup": uid,
        "fsGroup": uid,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def _spread(name: str, hostname: str = "DoNotSchedule") -> list[dict[str, Any]]:
    """Spread ``name``'s pods over nodes (never two more on one node than another: a node's loss
    takes few) and over zones as far as the cluster has them (ScheduleAnyway: a single-zone
    cluster still schedules)."""
    return [
        {
            "maxSkew": 1,
            "topologyKey": key,
            "whenUnsatisfiable": when,
            "labelSelector": {"matchLabels": _labels(name)},
        }
        for key, when in (
            ("kubernetes.io/hostname", hostname),
            ("topology.kubernetes.io/zone", "ScheduleAnyway"),
        )
    ]


def _kafka_password(principal: str) -> dict[str, str]:
    """The Secret item that is ``principal``'s Kafka password, as the file settings read."""
    return {"key": f"SLUICE_KAFKA_SASL_PASSWORD_{principal.upper()}", "path": "SLUICE_KAFKA_SASL_PASSWORD"}


def _database_url(pod: str) -> dict[str, str]:
    """The Secret item that is ``pod``'s database URL (its role's), as the file settings read."""
    return {"key": f"SLUICE_DATABASE_URL_{DATABASE_ROLE[pod].upper()}", "path": "SLUICE_DATABASE_URL"}


def _kafka_ca_volume() -> dict[str, Any]:
    """The brokers' CA from the Secret sluice-kafka-tls: its ca.crt and nothing else (a Kafka
    client never sees the brokers' key), as SLUICE_KAFKA_SSL_CAFILE names it."""
    items = [{"key": "ca.crt", "path": "ca.crt"}]
    return {
        "name": "kafka-ca",
        "secret": {"secretName": KAFKA_TLS_SECRET, "items": items, "defaultMode": 0o440},
    }


KAFKA_CA_MOUNT = {"name": "kafka-ca", "mountPath": KAFKA_CA_DIR, "readOnly": True}


def secret_name(pod: str) -> str:
    """The Secret of ``pod`` (a service, the migration Job, the ACL Job) alone: no pod mounts
    another's, so none can read another's keys even through its volume's items."""
    return f"sluice-{pod}-secrets"


def _pod_volumes(pod: str, kafka_user: str | None = None) -> list[dict[str, Any]]:
    secret_files = {
        "secretName": secret_name(pod),
        "items": [{"key": s, "path": s} for s in POD_SECRETS[pod]]
        + [_database_url(pod)]
        + (
            [{"key": f"SLUICE_REDIS_URL_{pod.upper()}", "path": "SLUICE_REDIS_URL"}]
            if pod in VALKEY_PODS
            else []
        )
        + ([_kafka_password(kafka_user)] if kafka_user else []),
        "defaultMode": 0o440,  # root and the pod's group (fsGroup) read them, nobody else
    }
    volumes = [{"name": "tmp", "emptyDir": {}}, {"name": "secrets", "secret": secret_files}]
    return volumes + ([_kafka_ca_volume()] if kafka_user else [])


def _env(name: str, port: int) -> list[dict[str, Any]]:
    env: list[dict[str, Any]] = [
        {"name": f"SLUICE_{name.upper()}_PORT", "value": str(port)},
        {"name": f"SLUICE_{name.upper()}_HOST", "value": "0.0.0.0"},  # nosec B104 - in its pod
    ]
    if name in METRICS_PORTS:
        env.append({"name": f"SLUICE_{name.upper()}_METRICS_PORT", "value": str(METRICS_PORTS[name])})
    env.append({"name": "SLUICE_SECRETS_DIR", "value": SECRETS_DIR})
    return env


def _container(name: str, port: int, args: list[str]) -> dict[str, Any]:
    return {
        "name": name,
        "image": IMAGE,
        "imagePullPolicy": "Always",  # the kubelet checks the registry (and its credentials)
        "args": args,
        "envFrom": [{"configMapRef": {"name": "sluice-config"}}],
        "env": _env(name, port),
        "ports": [{"name": "http", "containerPort": port}]
        + ([{"name": "metrics", "containerPort": METRICS_PORTS[name]}] if name in METRICS_PORTS else []),
        "resources": {
            "requests": {"cpu": "250m", "memory": "160Mi"},
            "limits": {"cpu": "1", "memory": "320Mi"},
        },
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": UID,
            "readOnlyRootFilesystem": True,
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "volumeMounts": [
            {"name": "tmp", "mountPath": "/tmp"},  # nosec B108 - an emptyDir
            {"name": "secrets", "mountPath": SECRETS_DIR, "readOnly": True},
        ],
    }


def _meta(name: str, labels: dict[str, str], annotations: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": NAMESPACE, "labels": labels}
    if annotations:
        meta["annotations"] = annotations
    return meta


def _manifest(
    api_version: str, kind: str, name: str, spec: dict[str, Any], annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    """The ``kind`` object ``sluice-<name>`` with that component's labels."""
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": _meta(f"sluice-{name}", _labels(name), annotations),
        "spec": spec,
    }


def deployment(name: str, port: int) -> dict[str, Any]:
    c = _container(name, port, ["serve", name])
    c["env"].append({"name": "SLUICE_KAFKA_SASL_USERNAME", "value": name})  # User:<service>
    c["volumeMounts"].append(KAFKA_CA_MOUNT)  # SLUICE_KAFKA_SSL_CAFILE
    c["livenessProbe"] = {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 10}
    c["readinessProbe"] = {"httpGet": {"path": "/readyz", "port": "http"}, "periodSeconds": 5}
    c["startupProbe"] = {"httpGet": {"path": "/healthz", "port": "http"}, "failureThreshold": 30}
    # A terminating pod is still sent requests until the endpoints controller and the ingress
    # have seen it go: it keeps serving PRESTOP_S, then SIGTERM drains what it holds (the
    # gateway up to its timeout + 2 s), all within terminationGracePeriodSeconds.
    c["lifecycle"] = {"preStop": {"exec": {"command": ["sleep", str(PRESTOP_S)]}}}
    return _manifest(
        "apps/v1",
        "Deployment",
        name,
        {
            "selector": {"matchLabels": _labels(name)},
            "template": {
                "metadata": {
                    "labels": _labels(name),
                    "annotations": {
                        "prometheus.io/scrape": "true",  # for a Prometheus without the Operator
                        "prometheus.io/port": str(METRICS_PORTS.get(name, port)),
                        "prometheus.io/path": "/metrics",
                    },
                },
                "spec": {
                    "automountServiceAccountToken": False,
                    "terminationGracePeriodSeconds": 30,
                    "securityContext": _pod_security(UID),
                    "topologySpreadConstraints": _spread(name),
                    "containers": [c],
                    "volumes": _pod_volumes(name, name),
                },
            },
        },
        _skips(IMAGE_DIGEST_SKIP),
    )


# The broker: the release tools.stack.kafka runs (tests/unit/test_kafka_version.py).
KAFKA_IMAGE = "apache/kafka:4.1.2"
KAFKA_NODES = 3
KAFKA_UID = 1000  # appuser, who owns /opt/kafka in the image
# The listeners, every one SASL over TLS, so that no password crosses the network in clear: CLIENT
# takes the services, the Jobs and KEDA with SCRAM-SHA-512 only; INTERNAL (broker to broker, and the
# SCRAM Job) and CONTROLLER (the KRaft quorum) take the brokers' own principal with PLAIN, over TLS.
# Why PLAIN there: SCRAM credentials live in the cluster's metadata log, which the controllers
# serve, so the controller listener cannot authenticate with SCRAM (KRaft's quorum must talk before
# any credential is read), and SCRAM between brokers would need the brokers' credential bootstrapped
# at storage format (`kafka-storage format --add-scram`), which the image's start script does not do
# and which a persistent volume, formatted once, never does again. PLAIN over TLS sends the password
# encrypted to a peer whose certificate is checked; the brokers' users are the JAAS file's.
KAFKA_PORTS = {"CLIENT": 9092, "CONTROLLER": 9093, "INTERNAL": 9094}
KAFKA_DOMAIN = f"kafka-nodes.{NAMESPACE}.svc"  # each node's name: kafka-<i>.<this>


def kafka_node(i: int) -> str:
    """Node ``i``'s address, as the others, the clients and KEDA (from its own namespace) dial it."""
    return f"kafka-{i}.{KAFKA_DOMAIN}"


# Every name a client or a node dials on TLS (hostname verification): the certificate of
# sluice-kafka-tls must carry them all as DNS names (docs/operations.md lists them).
KAFKA_TLS_DNS_NAMES = [
    "kafka",  # the ConfigMap's bootstrap, in the namespace
    f"kafka.{NAMESPACE}.svc",  # KEDA's bootstrap, from its own namespace
    *(kafka_node(i) for i in range(KAFKA_NODES)),  # what each node advertises; the voters
]
# What checkov asks of the broker that its image cannot give, and why (docker/resources in
# apache/kafka: the start script refuses to run unless /opt/kafka/config is writable).
KAFKA_DIGEST_SKIP = (
    "CKV_K8S_43=the digest of apache/kafka:4.1.2 was not looked up (no registry access where this"
    " was written); pin it as apache/kafka:4.1.2@sha256:<digest> from"
    " `docker buildx imagetools inspect apache/kafka:4.1.2`, keeping the tag that"
    " tests/unit/test_kafka_version.py reads"
)
KAFKA_SKIPS = (
    KAFKA_DIGEST_SKIP,
    "CKV_K8S_22=the image's start script (/etc/kafka/docker/configure) writes server.properties"
    " and the log4j files into /opt/kafka/config and exits when it is not writable; Kafka also"
    " logs under /opt/kafka/logs. A read-only root needs those paths on volumes, untested here",
    "CKV_K8S_40=the image's files (/opt/kafka, its config directory included) belong to its user"
    " appuser, uid 1000, and are not group-writable: under another uid the start script exits",
)
KAFKA_KEYSTORE = "/etc/kafka/keystore/keystore.pem"  # assembled at start, in memory (emptyDir)
# The node's start: its PEM keystore (the key, PKCS#8 as Kafka reads it, then the certificate
# chain) assembled from the TLS Secret, readable by its user alone; node.id and the advertised
# addresses from the pod's ordinal (kafka-0 -> 0). The listener names carry no "SSL://": the
# image's configure script would then ask for a JKS keystore and its password files.
KAFKA_START = f"""set -eu
umask 077
if ! grep -q -- '-----BEGIN PRIVATE KEY-----' {KAFKA_TLS_DIR}/tls.key; then
  echo '{KAFKA_TLS_SECRET}: tls.key must be an unencrypted PKCS#8 key' \\
    '(cert-manager: privateKey.encoding: PKCS8)' >&2
  exit 1
fi
cat {KAFKA_TLS_DIR}/tls.key {KAFKA_TLS_DIR}/tls.crt > {KAFKA_KEYSTORE}
host="${{HOSTNAME}}.{KAFKA_DOMAIN}"
export KAFKA_NODE_ID="${{HOSTNAME##*-}}"
export KAFKA_ADVERTISED_LISTENERS="CLIENT://${{host}}:{KAFKA_PORTS["CLIENT"]},INTERNAL://${{host}}:{KAFKA_PORTS["INTERNAL"]}"
exec /etc/kafka/docker/run
"""


def kafka() -> list[dict[str, Any]]:
    """Three KRaft nodes (broker and controller each), replication 3, min.insync.replicas 2:
    the cluster `make chaos` kills, pauses and restarts on one machine (tools.chaos.kafka)."""
    voters = ",".join(f"{i}@{kafka_node(i)}:{KAFKA_PORTS['CONTROLLER']}" for i in range(KAFKA_NODES))
    env = {
        "KAFKA_PROCESS_ROLES": "broker,controller",
        # Every listener takes SASL over TLS and every request needs an ACL (common.acls)
        "KAFKA_LISTENERS": ",".join(f"{name}://:{port}" for name, port in KAFKA_PORTS.items()),
        "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": ",".join(f"{name}:SASL_SSL" for name in KAFKA_PORTS),
        "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
        "KAFKA_INTER_BROKER_LISTENER_NAME": "INTERNAL",
        # PLAIN on INTERNAL and CONTROLLER (the brokers' own principal); SCRAM-SHA-512 alone on
        # CLIENT, whose login module holds no password (the credentials are the cluster's)
        "KAFKA_SASL_ENABLED_MECHANISMS": "PLAIN",
        "KAFKA_LISTENER_NAME_CLIENT_SASL_ENABLED_MECHANISMS": "SCRAM-SHA-512",
        "KAFKA_LISTENER_NAME_CLIENT_SCRAM___SHA___512_SASL_JAAS_CONFIG": (
            "org.apache.kafka.common.security.scram.ScramLoginModule required;"
        ),
        "KAFKA_SASL_MECHANISM_INTER_BROKER_PROTOCOL": "PLAIN",
        "KAFKA_SASL_MECHANISM_CONTROLLER_PROTOCOL": "PLAIN",
        # TLS: the node's key and certificate (KAFKA_START), the CA it checks its peers against;
        # every connection checks the peer's name (KAFKA_TLS_DNS_NAMES)
        "KAFKA_SSL_KEYSTORE_TYPE": "PEM",
        "KAFKA_SSL_KEYSTORE_LOCATION": KAFKA_KEYSTORE,
        "KAFKA_SSL_TRUSTSTORE_TYPE": "PEM",
        "KAFKA_SSL_TRUSTSTORE_LOCATION": f"{KAFKA_TLS_DIR}/ca.crt",
        "KAFKA_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM": "https",
        "KAFKA_AUTHORIZER_CLASS_NAME": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "KAFKA_SUPER_USERS": f"User:{KAFKA_BROKER_USER}",
        "KAFKA_ALLOW_EVERYONE_IF_NO_ACL_FOUND": "false",
        # the node's own PLAIN login and user (username, password, user_broker): a file from a Secret
        "KAFKA_OPTS": f"-Djava.security.auth.login.config={KAFKA_JAAS_DIR}/kafka_server_jaas.conf",
        "KAFKA_CONTROLLER_QUORUM_VOTERS": voters,
        "KAFKA_DEFAULT_REPLICATION_FACTOR": "3",
        "KAFKA_MIN_INSYNC_REPLICAS": "2",
        "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "3",
        "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "3",
        "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "2",
        "KAFKA_NUM_PARTITIONS": str(PARTITIONS),
        "KAFKA_AUTO_CREATE_TOPICS_ENABLE": "false",  # python -m sluice topics creates them
        "KAFKA_LOG_DIRS": "/var/lib/kafka/data",
        "CLUSTER_ID": "c2x1aWNlLWthZmthLTAwMQ",  # one id for every node's storage format
    }
    container = {
        "name": "kafka",
        "image": KAFKA_IMAGE,
        "imagePullPolicy": "Always",
        "command": ["sh", "-c"],
        "args": [KAFKA_START],
        "env": [{"name": k, "value": v} for k, v in env.items()],
        "ports": [
            {"name": "kafka", "containerPort": KAFKA_PORTS["CLIENT"]},
            {"name": "controller", "containerPort": KAFKA_PORTS["CONTROLLER"]},
            {"name": "internal", "containerPort": KAFKA_PORTS["INTERNAL"]},
        ],
        "readinessProbe": {"tcpSocket": {"port": "kafka"}, "periodSeconds": 5},
        "livenessProbe": {"tcpSocket": {"port": "controller"}, "periodSeconds": 10},
        "resources": {
            "requests": {"cpu": "250m", "memory": "768Mi"},
            "limits": {"cpu": "2", "memory": "1536Mi"},
        },
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": KAFKA_UID,
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "volumeMounts": [
            {"name": "data", "mountPath": "/var/lib/kafka/data"},
            {"name": "jaas", "mountPath": KAFKA_JAAS_DIR, "readOnly": True},
            {"name": "tls", "mountPath": KAFKA_TLS_DIR, "readOnly": True},
            {"name": "keystore", "mountPath": KAFKA_KEYSTORE.rsplit("/", 1)[0]},
        ],
    }
    jaas = {
        "secretName": "sluice-kafka-jaas",
        "items": [{"key": "kafka_server_jaas.conf", "path": "kafka_server_jaas.conf"}],
        "defaultMode": 0o440,
    }
    tls = {
        "secretName": KAFKA_TLS_SECRET,
        "items": [{"key": k, "path": k} for k in ("tls.crt", "tls.key", "ca.crt")],
        "defaultMode": 0o440,
    }
    labels = _labels("kafka")
    node_ports = [{"name": n.lower(), "port": p} for n, p in KAFKA_PORTS.items()]
    return [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": _meta("kafka-nodes", labels),
            # the nodes find each other (the quorum) before any of them is ready
            "spec": {
                "clusterIP": "None",
                "publishNotReadyAddresses": True,
                "selector": labels,
                "ports": node_ports,
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": _meta("kafka", labels),
            "spec": {"selector": labels, "ports": [{"name": "kafka", "port": KAFKA_PORTS["CLIENT"]}]},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": _meta("kafka", labels, _skips(*KAFKA_SKIPS)),
            "spec": {
                "serviceName": "kafka-nodes",
                "replicas": KAFKA_NODES,
                "podManagementPolicy": "Parallel",  # a quorum needs a majority up together
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "automountServiceAccountToken": False,
                        "securityContext": _pod_security(KAFKA_UID),
                        "topologySpreadConstraints": _spread("kafka"),
                        "containers": [container],
                        "volumes": [
                            {"name": "jaas", "secret": jaas},
                            {"name": "tls", "secret": tls},
                            # the key in clear: memory, never the node's disk
                            {"name": "keystore", "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}},
                        ],
                    },
                },
                "volumeClaimTemplates": [
                    {
                        "metadata": {"name": "data"},
                        "spec": {
                            "accessModes": ["ReadWriteOnce"],
                            "resources": {"requests": {"storage": "20Gi"}},
                        },
                    }
                ],
            },
        },
    ]


# Who gets a SCRAM credential, and where the Job reads each password: every service principal
# and the brokers' own (the ACL Job's login on CLIENT) from each one's Secret (secret_name), KEDA's from the
# Secret its TriggerAuthentication reads, so that it is written once.
KAFKA_SCRAM_USERS = [*SERVICES, KAFKA_BROKER_USER, KAFKA_SCALER_USER]
KAFKA_SCRAM_DIR = "/run/secrets/kafka"  # one file per user, named after it
# The Job's script: a client configuration as the brokers' principal (PLAIN over TLS, on
# INTERNAL), then one SCRAM-SHA-512 credential per user with kafka-configs.sh. Passwords are
# read from the mounted files into files under /tmp (memory, mode 0600) and never put on a
# command line, in the environment or in the log: printf is the shell's own; sed escapes them
# for a Java properties file (backslash) and, in the JAAS value, for its quoted string too. An
# empty password file stops it before anything is changed.
KAFKA_SCRAM_SCRIPT = f"""set -eu
umask 077
props() {{ sed -e 's/\\\\/\\\\\\\\/g' "$1" | tr -d '\\n'; }}
jaas() {{ sed -e 's/\\\\/\\\\\\\\\\\\\\\\/g' -e 's/"/\\\\\\\\"/g' "$1" | tr -d '\\n'; }}
for user in {" ".join(KAFKA_SCRAM_USERS)}; do  # an empty file would be an empty password
  grep -q . "{KAFKA_SCRAM_DIR}/$user" || {{ echo "sluice-kafka-scram: no password for $user" >&2; exit 1; }}
done
{{
  echo 'security.protocol=SASL_SSL'
  echo 'sasl.mechanism=PLAIN'
  echo 'ssl.truststore.type=PEM'
  echo 'ssl.truststore.location={KAFKA_TLS_DIR}/ca.crt'
  printf 'sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required'
  printf ' username="{KAFKA_BROKER_USER}" password="%s";\\n' "$(jaas {KAFKA_SCRAM_DIR}/{KAFKA_BROKER_USER})"
}} > /tmp/client.properties
for user in {" ".join(KAFKA_SCRAM_USERS)}; do
  printf 'SCRAM-SHA-512=password=%s\\n' "$(props "{KAFKA_SCRAM_DIR}/$user")" > /tmp/scram.properties
  /opt/kafka/bin/kafka-configs.sh --bootstrap-server "$KAFKA_BOOTSTRAP" \\
    --command-config /tmp/client.properties --alter --entity-type users --entity-name "$user" \\
    --add-config-file /tmp/scram.properties
done
rm -f /tmp/client.properties /tmp/scram.properties
"""


def kafka_scram_job() -> dict[str, Any]:
    """SCRAM-SHA-512 credentials for every principal (KAFKA_SCRAM_USERS), stored by the brokers
    in the cluster's metadata, made with kafka-configs.sh (the AlterUserScramCredentials request)
    as the brokers' own principal. A Job rather than `kafka-storage format --add-scram`: the
    brokers' volumes persist and are formatted once, so a credential given at format time could
    never be added for a new principal or changed for a new password; this Job is idempotent
    (each run sets each credential again) and runs again after a password changes. Apply it
    after the StatefulSet and before sluice-kafka-acls and the Deployments (docs/operations.md):
    until it has run, their logins are refused and they retry (the Jobs by their backoff, the
    Deployments by restarting: common.kafka's clients fail their start)."""
    bootstrap = ",".join(f"{kafka_node(i)}:{KAFKA_PORTS['INTERNAL']}" for i in range(KAFKA_NODES))
    # each Secret's SLUICE_KAFKA_SASL_PASSWORD_<USER> as the file <user>; KEDA's its own Secret's
    passwords = [
        {
            "name": secret_name("kafka-acls" if u == KAFKA_BROKER_USER else u),
            "items": [{"key": f"SLUICE_KAFKA_SASL_PASSWORD_{u.upper()}", "path": u}],
        }
        for u in KAFKA_SCRAM_USERS
        if u != KAFKA_SCALER_USER
    ]
    scaler = {"name": "sluice-keda-kafka", "items": [{"key": "password", "path": KAFKA_SCALER_USER}]}
    container = {
        "name": "kafka-scram",
        "image": KAFKA_IMAGE,
        "imagePullPolicy": "Always",
        "command": ["sh", "-c"],
        "args": [KAFKA_SCRAM_SCRIPT],
        "env": [
            {"name": "KAFKA_BOOTSTRAP", "value": bootstrap},
            {"name": "LOG_DIR", "value": "/tmp/logs"},  # kafka-run-class.sh's, off the read-only root
            {"name": "KAFKA_HEAP_OPTS", "value": "-Xmx256m"},
        ],
        "resources": {
            "requests": {"cpu": "100m", "memory": "256Mi"},
            "limits": {"cpu": "1", "memory": "512Mi"},
        },
        # a client only: it reads the image's files (world-readable) and writes /tmp alone
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": UID,
            "readOnlyRootFilesystem": True,
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "volumeMounts": [
            {"name": "tmp", "mountPath": "/tmp"},  # nosec B108 - an emptyDir
            {"name": "passwords", "mountPath": KAFKA_SCRAM_DIR, "readOnly": True},
            {"name": "tls", "mountPath": KAFKA_TLS_DIR, "readOnly": True},
        ],
    }
    pod = {
        "restartPolicy": "OnFailure",
        "automountServiceAccountToken": False,
        "securityContext": _pod_security(UID),
        "containers": [container],
        "volumes": [
            {"name": "tmp", "emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}},
            {
                "name": "passwords",
                "projected": {"sources": [{"secret": p} for p in [*passwords, scaler]], "defaultMode": 0o440},
            },
            {"name": "tls", "secret": _kafka_ca_volume()["secret"]},  # ca.crt alone
        ],
    }
    # the brokers may still be electing a controller: ten restarts within a quarter of an hour
    return _job("kafka-scram", pod, 10, 900, KAFKA_DIGEST_SKIP)


def kafka_acls_job() -> dict[str, Any]:
    """``python -m sluice topics`` then ``python -m sluice acls`` as the brokers' own principal:
    every shared topic at the cluster's replication (KAFKA_TOPIC_SETTINGS: no service creates
    one, SLUICE_KAFKA_CREATE_TOPICS is off, and no principal but this one may), then every
    service's ACLs (common.acls.plan), on the CLIENT listener with SCRAM-SHA-512 over TLS like
    every other client (its credential is sluice-kafka-scram's). Idempotent; apply it after
    sluice-kafka-scram and before the Deployments (they are refused until it completes: `kubectl
    wait --for=condition=complete job -l app.kubernetes.io/name=kafka-acls`). Its pod holds the super user's
    password and the brokers' CA, nothing else."""
    c = _container("kafka-acls", 8000, ["python -m sluice topics && python -m sluice acls"])
    c["command"] = ["/usr/bin/tini", "--", "sh", "-c"]  # the image's entry point runs one command
    c.pop("ports")
    c["env"].append({"name": "SLUICE_KAFKA_SASL_USERNAME", "value": KAFKA_BROKER_USER})
    c["volumeMounts"].append(KAFKA_CA_MOUNT)
    broker_password = {"secretName": secret_name("kafka-acls"), "items": [_kafka_password(KAFKA_BROKER_USER)]}
    pod = {
        "restartPolicy": "OnFailure",
        "automountServiceAccountToken": False,
        "securityContext": _pod_security(UID),
        "containers": [c],
        "volumes": [
            {"name": "tmp", "emptyDir": {}},
            {"name": "secrets", "secret": {**broker_password, "defaultMode": 0o440}},
            _kafka_ca_volume(),
        ],
    }
    return _job("kafka-acls", pod, 10, 900, IMAGE_DIGEST_SKIP)  # as sluice-kafka-scram's


def keda_kafka_auth() -> dict[str, Any]:
    """KEDA's Kafka scaler connects as ``User:keda`` (DESCRIBE on the consumed topics and
    their groups, common.acls) with SCRAM-SHA-512 over TLS, from the Secret sluice-keda-kafka
    (in this namespace; KEDA's operator reads that Secret alone): sasl=scram_sha512, tls=enable,
    ca (the brokers' CA, sluice-kafka-tls' ca.crt), username=keda, password (the credential
    sluice-kafka-scram creates from it)."""
    keys = ("sasl", "tls", "ca", "username", "password")
    refs = [{"parameter": k, "name": "sluice-keda-kafka", "key": k} for k in keys]
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "TriggerAuthentication",
        "metadata": _meta("sluice-keda-kafka", LABELS),
        "spec": {"secretTargetRef": refs},
    }


def scaled_object(name: str) -> dict[str, Any]:
    """KEDA scales ``name`` on the lag of each of its consumer groups (CONSUMER_GROUPS), from
    MIN_REPLICAS to as many consumers as a group can use (its topic's partitions)."""
    triggers = [
        {
            "type": "kafka",
            "metadata": {
                # KEDA's operator connects from its own namespace
                "bootstrapServers": f"kafka.{NAMESPACE}.svc:{KAFKA_PORTS['CLIENT']}",
                "consumerGroup": group,
                "topic": topic,
                "lagThreshold": "100",
            },
            "authenticationRef": {"name": "sluice-keda-kafka"},
        }
        for group, topic in CONSUMER_GROUPS[name].items()
    ]
    spec = {
        "scaleTargetRef": {"name": f"sluice-{name}"},
        "minReplicaCount": MIN_REPLICAS,
        "maxReplicaCount": MAX_REPLICAS[name],  # within the connection budget and the partitions
        "triggers": triggers,
    }
    return _manifest("keda.sh/v1alpha1", "ScaledObject", name, spec)


def autoscaler(name: str) -> dict[str, Any]:
    """The HPA of a service that takes outside traffic: on CPU, 60 %, MIN_REPLICAS to MAX_REPLICAS."""
    cpu = {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}
    spec = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": f"sluice-{name}"},
        "minReplicas": MIN_REPLICAS,
        "maxReplicas": MAX_REPLICAS[name],
        "metrics": [{"type": "Resource", "resource": cpu}],
    }
    return _manifest("autoscaling/v2", "HorizontalPodAutoscaler", name, spec)


def disruption_budget(name: str) -> dict[str, Any]:
    """One pod of ``name`` at a time may be evicted: with MIN_REPLICAS (three Kafka brokers, two
    in sync) a drain proceeds and never takes the last one (a quorum keeps its majority)."""
    spec = {"maxUnavailable": 1, "selector": {"matchLabels": _labels(name)}}
    return _manifest("policy/v1", "PodDisruptionBudget", name, spec)


def database_service() -> dict[str, Any]:
    """``sluice-database``: the name the database URLs use, a DNS alias (ExternalName) of the
    read-write endpoint, which an overlay sets (``spec.externalName``)."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(DATABASE_SERVICE, _labels("database")),
        "spec": {"type": "ExternalName", "externalName": DATABASE_TARGET},
    }


def base() -> dict[str, list[dict[str, Any]]]:
    files: dict[str, list[dict[str, Any]]] = {}
    files["namespace.yaml"] = [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            # Pod Security admission's restricted profile, which every pod here meets.
            "metadata": {
                "name": NAMESPACE,
                "labels": {**LABELS, "pod-security.kubernetes.io/enforce": "restricted"},
            },
        }
    ]
    files["kafka.yaml"] = kafka()
    files["config.yaml"] = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": _meta("sluice-config", LABELS),
            "data": {
                "SLUICE_ENV": "production",
                # No SLUICE_DATABASE_URL: each pod's own role's is a secret file (POD_SECRETS);
                # no SLUICE_REDIS_URL: each Valkey user's is a secret file (VALKEY_PODS).
                "SLUICE_KAFKA_BOOTSTRAP": f"kafka:{KAFKA_PORTS['CLIENT']}",
                **KAFKA_SASL,  # each Deployment adds its principal (SLUICE_KAFKA_SASL_USERNAME)
                "SLUICE_KAFKA_SSL_CAFILE": KAFKA_CA_FILE,  # the kafka-ca volume of each client
                "SLUICE_KAFKA_FETCH_MAX_WAIT_MS": "100",
                "SLUICE_KAFKA_IDEMPOTENT_PRODUCER": "true",  # Apache Kafka: acks=all, no duplicate on retry
                "SLUICE_KAFKA_TOPIC_PARTITIONS": str(PARTITIONS),
                **KAFKA_TOPIC_SETTINGS,
                # The ingress sets this one header; its addresses are an input (INPUTS)
                "SLUICE_CLIENT_IP_HEADER": "X-Forwarded-For",
            },
        }
    ]
    job = _container("migrate", 8000, ["migrate"])
    job.pop("ports")
    pod = {
        "restartPolicy": "OnFailure",
        "automountServiceAccountToken": False,
        "securityContext": _pod_security(UID),
        "containers": [job],
        "volumes": _pod_volumes("migrate"),
    }
    # Each migration only adds (docs/operations/upgrade.md), so the last release's pods run on
    # while it does; a lock wait or a long backfill gets half an hour, three restarts.
    files["migrate-job.yaml"] = [_job("migrate", pod, 3, 1800, IMAGE_DIGEST_SKIP)]
    files["kafka-scram-job.yaml"] = [kafka_scram_job()]
    files["kafka-acls-job.yaml"] = [kafka_acls_job()]
    files["deployments.yaml"] = [_server(deployment(n, p)) for n, (p, _, _) in SERVICES.items()]
    files["services.yaml"] = [
        _manifest(
            "v1",
            "Service",
            n,
            {"selector": _labels(n), "ports": [{"name": "http", "port": p, "targetPort": "http"}]},
        )
        for n, (p, _, _) in SERVICES.items()
    ] + [database_service()]
    files["hpa.yaml"] = [_server(autoscaler(n)) for n, (_, http, _) in SERVICES.items() if http]
    files["keda.yaml"] = [_server(scaled_object(n)) for n in CONSUMER_GROUPS] + [keda_kafka_auth()]
    files["pdb.yaml"] = [disruption_budget(n) for n in [*SERVICES, "kafka"]]
    files["networkpolicy.yaml"] = network_policies()
    files["monitoring.yaml"] = monitoring()
    return files


def _from_namespace(name: str) -> dict[str, Any]:
    return {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": name}}}


def _only(*names: str) -> dict[str, Any]:
    if len(names) == 1:
        return {"matchLabels": {"app.kubernetes.io/name": names[0]}}
    return {"matchExpressions": [{"key": "app.kubernetes.io/name", "operator": "In", "values": list(names)}]}


def _pods(*names: str) -> dict[str, Any]:
    return {"podSelector": _only(*names)}


def _ports(*ports: int | str, protocol: str = "TCP") -> list[dict[str, Any]]:
    return [{"port": p, "protocol": protocol} for p in ports]


# PostgreSQL's pods carry app.kubernetes.io/name: postgresql (CloudNativePG's through the Cluster's
# spec.inheritedMetadata; label a server of your own so), Valkey's valkey: the policies select them
# by it. CloudNativePG's operator runs in CNPG_NAMESPACE and calls each instance's manager (8000).
CNPG_NAMESPACE = "cnpg-system"
POSTGRES_PORTS = {"postgres": 5432, "status": 8000, "metrics": 9187}
VALKEY_PORT = 6379
DATABASE_CLIENTS = (*SERVICES, "migrate")
# What webhooks may never dial (docs/security.md: deliveries go to public addresses only): private,
# shared, loopback, link-local (the clouds' metadata service) and unspecified ranges.
PRIVATE_V4 = [
    "0.0.0.0/8",
    "10.0.0.0/8",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "169.254.0.0/16",
    "172.16.0.0/12",
    "192.168.0.0/16",
]
# No IPv4-mapped block (::ffff:0:0/96): the API server refuses one in a NetworkPolicy, and none is
# needed, since a mapped address lives only in a dual-stack socket's API; on the wire the packet
# is IPv4, which PRIVATE_V4 covers (webhooks refuses a mapped private target itself too).
PRIVATE_V6 = ["::1/128", "fc00::/7", "fe80::/10"]


def _ingress_policies() -> list[tuple[str, dict[str, Any], list[dict[str, Any]]]]:
    """(name, pods, who may reach them) for every pod of the suite and its stores: docs/operations.md,
    "Network policies", has the flow table."""
    suite = {"podSelector": {"matchLabels": dict(LABELS)}}
    prometheus = _from_namespace(MONITORING_NAMESPACE)
    consumers = [n for n, (_, http, _) in SERVICES.items() if not http]
    pg = POSTGRES_PORTS
    return [
        (
            "sluice-consumers-ingress",
            _only(*consumers),
            [{"from": [suite, prometheus], "ports": _ports("http")}],
        ),
        ("sluice-jobs-ingress", _only("migrate", "kafka-scram", "kafka-acls"), []),  # nothing dials a Job
        (
            "sluice-kafka-ingress",
            _only("kafka"),
            [
                {"from": [suite, _from_namespace(KEDA_NAMESPACE)], "ports": _ports(KAFKA_PORTS["CLIENT"])},
                {
                    "from": [_pods("kafka")],
                    "ports": _ports(KAFKA_PORTS["CONTROLLER"], KAFKA_PORTS["INTERNAL"]),
                },
                {"from": [_pods("kafka-scram")], "ports": _ports(KAFKA_PORTS["INTERNAL"])},
            ],
        ),
        (
            "sluice-gateway-ingress",
            _only("gateway"),
            [
                {"ports": _ports("http")},
                {"from": [prometheus, suite], "ports": _ports(METRICS_PORTS["gateway"])},
            ],
        ),
        (
            "sluice-admin-ingress",
            _only("admin"),
            [{"from": [_from_namespace(OPERATORS_NAMESPACE), prometheus], "ports": _ports("http")}],
        ),
        (
            "sluice-postgresql-ingress",
            _only("postgresql"),
            [
                {"from": [_pods(*DATABASE_CLIENTS)], "ports": _ports(pg["postgres"])},
                # replication between instances, and the operator's Jobs (join, initdb)
                {"from": [_pods("postgresql")], "ports": _ports(pg["postgres"], pg["status"])},
                {"from": [_from_namespace(CNPG_NAMESPACE)], "ports": _ports(pg["postgres"], pg["status"])},
                {"from": [prometheus], "ports": _ports(pg["metrics"])},
            ],
        ),
        (
            "sluice-valkey-ingress",
            _only("valkey"),
            [{"from": [_pods(*VALKEY_PODS)], "ports": _ports(VALKEY_PORT)}],
        ),
    ]


def _webhooks_egress() -> dict[str, Any]:
    """webhooks dials the suite's stores in the namespace, the cluster's DNS and public addresses
    only. A database outside the cluster (a managed one at a private address) needs its CIDR
    added here by an overlay."""
    dns = {
        "to": [{"namespaceSelector": {}, "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}],
        "ports": _ports(53, protocol="UDP") + _ports(53),
    }
    stores = {"to": [_pods("postgresql", "kafka")]}
    public = {
        "to": [
            {"ipBlock": {"cidr": "0.0.0.0/0", "except": PRIVATE_V4}},
            {"ipBlock": {"cidr": "::/0", "except": PRIVATE_V6}},
        ]
    }
    return {"podSelector": _only("webhooks"), "policyTypes": ["Egress"], "egress": [dns, stores, public]}


def network_policies() -> list[dict[str, Any]]:
    """Who may reach each pod (ingress, a policy per group of pods) and where webhooks may go
    (egress): the flows of docs/operations.md, "Network policies"."""
    specs = [
        (name, {"podSelector": pods, "policyTypes": ["Ingress"], "ingress": ingress})
        for name, pods, ingress in _ingress_policies()
    ]
    specs.append(("sluice-webhooks-egress", _webhooks_egress()))
    return [
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": _meta(name, LABELS),
            "spec": spec,
        }
        for name, spec in specs
    ]


# Prometheus on Kubernetes, through the Prometheus Operator (docs/operations/runbooks.md, "On
# Kubernetes"): a PodMonitor per service on its metrics port (METRICS_PORTS, else its own port),
# whose jobLabel makes `job` the service's name (its pod label app.kubernetes.io/name), as
# deploy/prometheus.yml names the jobs, so the rules' expressions are the same everywhere; the
# rules of deploy/prometheus/alerts.yml as PrometheusRules, the postgres_exporter group on its own
# (the cloudnative-pg overlay replaces it with alerts-cloudnative-pg.yml's, CloudNativePG's names).
PROMETHEUS_RULES = HERE.parent / "prometheus"  # deploy/prometheus
POSTGRES_EXPORTER_GROUP = "sluice-postgres-exporter"
CNPG_CLUSTER = "sluice-pg"  # overlays/cloudnative-pg/cluster.yaml


def pod_monitor(name: str, selector: dict[str, str], port: str, job_label: str) -> dict[str, Any]:
    spec = {
        "jobLabel": job_label,
        "selector": {"matchLabels": selector},
        "podMetricsEndpoints": [{"port": port, "path": "/metrics"}],
    }
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PodMonitor",
        "metadata": _meta(name, LABELS),
        "spec": spec,
    }


def prometheus_rule(name: str, groups: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": _meta(name, LABELS),
        "spec": {"groups": groups},
    }


def rule_groups(file: str) -> list[dict[str, Any]]:
    groups: list[dict[str, Any]] = yaml.safe_load((PROMETHEUS_RULES / file).read_text())["groups"]
    return groups


def monitoring() -> list[dict[str, Any]]:
    """The services' PodMonitors and the alert rules of deploy/prometheus/alerts.yml."""
    monitors = [
        pod_monitor(
            f"sluice-{n}", _labels(n), "metrics" if n in METRICS_PORTS else "http", "app.kubernetes.io/name"
        )
        for n in SERVICES
    ]
    groups = rule_groups("alerts.yml")
    exporter = [g for g in groups if g["name"] == POSTGRES_EXPORTER_GROUP]
    rest = [g for g in groups if g["name"] != POSTGRES_EXPORTER_GROUP]
    return [
        *monitors,
        prometheus_rule("sluice-alerts", rest),
        prometheus_rule("sluice-postgres-exporter-alerts", exporter),
    ]


def cnpg_monitoring() -> list[dict[str, Any]]:
    """The cloudnative-pg overlay's: a PodMonitor of the Cluster's instances (their exporter's
    port `metrics`, 9187; its own, not the deprecated spec.monitoring.enablePodMonitor) and the
    PostgreSQL rules over CloudNativePG's and the Barman Cloud plugin's metric names."""
    monitor = pod_monitor(CNPG_CLUSTER, {"cnpg.io/cluster": CNPG_CLUSTER}, "metrics", "cnpg.io/cluster")
    return [
        monitor,
        prometheus_rule("sluice-cloudnative-pg-alerts", rule_groups("alerts-cloudnative-pg.yml")),
    ]


HEADER = "# Generated by deploy/k8s/generate.py: edit the generator, then run it.\n"


def write_base() -> None:
    out = HERE / "base"
    out.mkdir(exist_ok=True)
    files = base()
    for name, docs in files.items():
        (out / name).write_text(HEADER + yaml.safe_dump_all(docs, sort_keys=False))
    cnpg = HERE / "overlays" / "cloudnative-pg" / "monitoring.yaml"
    cnpg.write_text(HEADER + yaml.safe_dump_all(cnpg_monitoring(), sort_keys=False))
    kust = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": sorted(files),
    }
    (out / "kustomization.yaml").write_text(yaml.safe_dump(kust, sort_keys=False))


def _merge(into: Any, patch: Any) -> Any:
    """A strategic merge as kustomize's: maps merged key by key, a key set to null removed,
    lists of named items merged by name, any other list or value replaced."""
    if isinstance(into, dict) and isinstance(patch, dict):
        out = dict(into)
        for k, v in patch.items():
            if v is None:
                out.pop(k, None)
            else:
                out[k] = _merge(into[k], v) if k in into else copy.deepcopy(v)
        return out
    if (
        isinstance(into, list)
        and isinstance(patch, list)
        and all(isinstance(x, dict) and "name" in x for x in into + patch)
    ):
        merged = {x["name"]: x for x in into}
        for x in patch:
            merged[x["name"]] = _merge(merged[x["name"]], x) if x["name"] in merged else copy.deepcopy(x)
        return list(merged.values())
    return copy.deepcopy(patch)


def _image_name(image: str) -> str:
    """An image reference without its tag or digest (a registry's port is not a tag)."""
    name = image.split("@", 1)[0]
    return name[: name.rindex(":")] if ":" in name.rsplit("/", 1)[-1] else name


def _set_images(node: Any, entry: dict[str, str]) -> None:
    """kustomize's ``images`` transformer: every container whose image is ``entry["name"]``
    (whatever its tag) gets ``newName``, ``newTag`` and ``digest`` (``name:tag@digest`` with
    both, ``name@digest`` with a digest alone)."""
    if isinstance(node, list):
        for x in node:
            _set_images(x, entry)
    elif isinstance(node, dict):
        for key in ("containers", "initContainers"):
            for c in node.get(key, []) if isinstance(node.get(key), list) else []:
                if isinstance(c, dict) and _image_name(c.get("image", "")) == entry["name"]:
                    ref = c["image"][len(entry["name"]) :]  # "", ":tag", "@digest", ":tag@digest"
                    tag, _, digest = ref.partition("@")
                    digest = f"@{digest}" if digest else ""
                    if "newTag" in entry:
                        tag, digest = f":{entry['newTag']}", ""
                    if "digest" in entry:
                        tag, digest = (tag if "newTag" in entry else ""), f"@{entry['digest']}"
                    c["image"] = entry.get("newName", entry["name"]) + tag + digest
        for v in node.values():
            _set_images(v, entry)


def read_env_file(path: Path) -> dict[str, str]:
    """A kustomize env file: ``KEY=VALUE`` lines; blank lines and ``#`` comments skipped."""
    lines = [x.strip() for x in path.read_text().splitlines()]
    pairs = [x.partition("=") for x in lines if x and not x.startswith("#")]
    return {k.strip(): v.strip() for k, _, v in pairs}


def missing_inputs(values: dict[str, str]) -> list[str]:
    """The required inputs (INPUTS) absent or empty in ``values``, each with what it is."""
    out = [f"{k} ({why})" for k, why in INPUTS.items() if not values.get(k)]
    url = values.get("SLUICE_PUBLIC_BASE_URL", "")
    if url and not url.startswith("https://"):
        out.append(f"SLUICE_PUBLIC_BASE_URL (must be https://, not {url!r})")
    return out


def _generate(
    directory: Path, generator: dict[str, Any], docs: list[dict[str, Any]], inputs: Path | None
) -> None:
    """kustomize's configMapGenerator with ``behavior: merge`` (the only one used here): its env
    files' keys merged into the ConfigMap of that name. sluice-config's must hold every input."""
    values: dict[str, str] = {}
    for name in generator.get("envs", []):
        path = inputs if inputs is not None else directory / name
        if not path.is_file():
            raise SystemExit(
                f"{directory}: {path} not found: copy {name}.example and set "
                + "; ".join(missing_inputs({}))
                + " (docs/operations/deploy.md, Required inputs)"
            )
        values.update(read_env_file(path))
    missing = missing_inputs(values) if generator["name"] == "sluice-config" else []
    if missing:
        raise SystemExit(f"{directory}: required inputs missing: " + "; ".join(missing))
    for d in docs:
        if (d["kind"], d["metadata"]["name"]) == ("ConfigMap", generator["name"]):
            d["data"] = {**d.get("data", {}), **values}


def _pointer(path: str) -> list[str]:
    """A JSON pointer's reference tokens (RFC 6901: ~1 is /, ~0 is ~)."""
    return [t.replace("~1", "/").replace("~0", "~") for t in path.split("/")[1:]]


def _json6902(doc: dict[str, Any], ops: list[dict[str, Any]], where: str) -> None:
    """A JSON patch (RFC 6902) applied to ``doc`` in place: add, replace and remove, the
    operations kustomize's patches with a ``target`` take (a custom resource's list of items
    that share a key, a KEDA trigger's or secret reference's, cannot be merged by name)."""
    for op in ops:
        *parents, last = _pointer(op["path"])
        node: Any = doc
        for token in parents:
            node = node[int(token)] if isinstance(node, list) else node[token]
        if op["op"] not in ("add", "replace", "remove"):
            raise SystemExit(f"{where}: unsupported JSON patch operation {op['op']!r}")
        if isinstance(node, list):
            index = len(node) if last == "-" else int(last)
            if op["op"] == "add":
                node.insert(index, copy.deepcopy(op["value"]))
            elif op["op"] == "replace":
                node[index] = copy.deepcopy(op["value"])
            else:
                del node[index]
        elif op["op"] != "add" and last not in node:
            raise SystemExit(f"{where}: {op['op']} {op['path']}: no such field")
        elif op["op"] == "remove":
            del node[last]
        else:
            node[last] = copy.deepcopy(op["value"])


def _patch_target(directory: Path, entry: dict[str, Any], docs: list[dict[str, Any]]) -> None:
    """A JSON patch entry: ``target`` (kind, name) and its operations, inline (``patch``) or
    in a file (``path``), applied to every resource of that kind and name."""
    target = entry["target"]
    text = entry["patch"] if "patch" in entry else (directory / entry["path"]).read_text()
    hits = [d for d in docs if (d["kind"], d["metadata"]["name"]) == (target["kind"], target["name"])]
    if not hits:
        raise SystemExit(f"{directory}: the patch of {target} matches no resource")
    for d in hits:
        _json6902(d, yaml.safe_load(text), f"{directory}: {target['kind']}/{target['name']}")


def _patch(directory: Path, path: str, docs: list[dict[str, Any]], text: str | None = None) -> None:
    """One strategic-merge patch, the file ``path`` or the inline ``text``: each document merged
    into the resources of its kind and name (and namespace, when it names one), or, with
    ``$patch: delete``, those removed (one such a patch: kustomize 5.5 fails on a file of
    several)."""
    for patch in yaml.safe_load_all(text if text is not None else (directory / path).read_text()):
        key = (patch["kind"], patch["metadata"]["name"])
        hits = [
            i
            for i, d in enumerate(docs)
            if (d["kind"], d["metadata"]["name"]) == key
            and patch["metadata"].get("namespace") in (None, d["metadata"].get("namespace"))
        ]
        if not hits:
            raise SystemExit(f"{directory}: patch {path} matches no {key}")
        for i in reversed(hits):
            if patch.get("$patch") == "delete":  # the resource removed, as kustomize removes it
                del docs[i]
            else:
                docs[i] = _merge(docs[i], patch)


def render(directory: Path, inputs: Path | None = None) -> list[dict[str, Any]]:
    """The resources of a kustomization directory: its resources (files or directories), its
    configMapGenerator merged (``inputs`` in place of its env files, when given), its
    ``patches`` applied, each patch matched to a resource by kind and name (a strategic merge,
    or a JSON patch where the entry names its ``target``), then its ``images`` set (name,
    newName, newTag, digest)."""
    kust = yaml.safe_load((directory / "kustomization.yaml").read_text())
    docs: list[dict[str, Any]] = []
    for res in kust.get("resources", []):
        path = directory / res
        docs += (
            render(path, inputs) if path.is_dir() else [d for d in yaml.safe_load_all(path.read_text()) if d]
        )
    for generator in kust.get("configMapGenerator", []):
        _generate(directory, generator, docs, inputs)
    for p in kust.get("patches", []):
        if "target" in p:
            _patch_target(directory, p, docs)
        else:
            _patch(directory, p.get("path", "(inline)"), docs, p.get("patch"))
    for entry in kust.get("images", []):
        _set_images(docs, entry)
    return docs


def main(argv: list[str]) -> None:
    """``render <overlay> [--inputs FILE]``: the overlay on stdout (FILE in place of its
    inputs.env); no argument: write the base."""
    if argv[:1] != ["render"]:
        write_base()
        return
    inputs = Path(argv[argv.index("--inputs") + 1]) if "--inputs" in argv else None
    print(yaml.safe_dump_all(render(HERE / "overlays" / argv[1], inputs), sort_keys=False), end="")


if __name__ == "__main__":
    main(sys.argv[1:])

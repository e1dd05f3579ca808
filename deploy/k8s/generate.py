"""Writes deploy/k8s/base/*.yaml (the kustomize base) from one table of services, and renders
an overlay (base + its strategic-merge patches, merged by kind and name, lists of named items
merged by name) into one document stream, as ``kustomize build`` would, for environments
without the kustomize binary (``python deploy/k8s/generate.py render production``).

Resource figures come from measurement (README, Performance): peak RSS under load 110-140 MB
per service, CPU per request 0.5-1.5 ms; requests are set at the idle figure, limits at about
twice the peak.

What checkov's Kubernetes checks ask for (``make lint`` runs them on the base and the rendered
production overlay) is done here; where a check cannot be met, the resource carries a
``checkov.io/skip<N>: CKV_K8S_xx=<reason>`` annotation saying why (``_skips``).
"""

from __future__ import annotations

import copy
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
PARTITIONS = 6  # SLUICE_KAFKA_TOPIC_PARTITIONS: the most consumers a group can use
SERVICES = {  # name: (port, http: takes outside traffic, consumer group topic or None)
    "gateway": (8000, True, None),
    "admin": (8001, True, None),
    "ledger": (8011, False, "sluice.ledger.commands"),
    "compliance": (8012, False, "sluice.compliance.commands"),
    "webhooks": (8013, False, "sluice.events"),
}
# Services whose /metrics are off their main port (the gateway's faces partners: contract 14.3).
METRICS_PORTS = {"gateway": 8010}
SECRETS = [
    "SLUICE_ADMIN_TOKEN",
    "SLUICE_JWT_SECRET",
    "SLUICE_ONBOARDING_SECRET",
    "SLUICE_ENCRYPTION_KEYS",
    "SLUICE_JOURNAL_ANCHOR_KEY",
    "SLUICE_GATEWAY_CACHE_KEY",
]
# Each pod mounts the secrets its process uses and no other (contract 14.3; the table of
# common.settings.SERVICE_SECRETS, tests/unit/test_least_privilege.py), and its own database
# role's URL: sluice-secrets' key SLUICE_DATABASE_URL_<ROLE> as the file SLUICE_DATABASE_URL
# (common.privileges: one role per service; the migration Job's is the migrations role).
POD_SECRETS = {
    "gateway": [
        "SLUICE_JWT_SECRET",
        "SLUICE_ONBOARDING_SECRET",
        "SLUICE_ENCRYPTION_KEYS",
        "SLUICE_GATEWAY_CACHE_KEY",  # the MAC on what it trusts from Valkey (issue 43)
    ],
    "admin": ["SLUICE_ADMIN_TOKEN", "SLUICE_JWT_SECRET"],
    "ledger": ["SLUICE_JOURNAL_ANCHOR_KEY"],  # signs the journal's anchors (issue 38 item 2)
    "compliance": [],
    "webhooks": ["SLUICE_ENCRYPTION_KEYS"],
    "migrate": [],
}
DATABASE_ROLE = {**{name: name for name in SERVICES}, "migrate": "migrations"}
# Valkey (contract 15.1, common.valkey_acl): only these pods use it, each as its own ACL user,
# its URL (with that user's password) sluice-secrets' key SLUICE_REDIS_URL_<POD> mounted as the
# file SLUICE_REDIS_URL; the ConfigMap carries none, so the other pods have no Valkey URL. The
# Valkey server takes its users from an ACL file (the Secret sluice-valkey-acl, key users.acl,
# printed with hashed passwords by `python -m sluice valkey-acl`).
VALKEY_PODS = ("gateway", "admin")
# The Secret ``sluice-secrets`` is mounted as files here, never passed as environment variables
# (checkov CKV_K8S_35): common.settings reads SLUICE_SECRETS_DIR's files named after settings.
SECRETS_DIR = "/run/secrets/sluice"
# Kafka with SASL/PLAIN and ACLs (contract 14.3, common.acls): each service connects as its own
# principal, User:<service>, with its own password, sluice-secrets' key
# SLUICE_KAFKA_SASL_PASSWORD_<SERVICE> mounted as the file SLUICE_KAFKA_SASL_PASSWORD (no pod sees
# another's). The brokers take their users from the Secret sluice-kafka-jaas; the Job
# sluice-kafka-acls creates every ACL as the brokers' own principal (the only super user).
KAFKA_SASL = {"SLUICE_KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT", "SLUICE_KAFKA_SASL_MECHANISM": "PLAIN"}
KAFKA_BROKER_USER = "broker"  # devstack.kafka_embedded.BROKER_USER
KAFKA_JAAS_DIR = "/etc/kafka/jaas"
UID = 10001  # the image's user (Dockerfile)
LABELS = {"app.kubernetes.io/part-of": "sluice"}
# The application image's tag is fixed, its digest is not known before CI builds it.
IMAGE_DIGEST_SKIP = (
    "CKV_K8S_43=ghcr.io/sluice/sluice is built from this repository's Dockerfile: its digest exists"
    " only once a release is built and pushed, so the base names the release tag and a deployment"
    " pins the digest in its overlay (images: digest, `kustomize edit set image`)"
)


def _labels(name: str) -> dict[str, str]:
    return {**LABELS, "app.kubernetes.io/name": name}


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


def _kafka_password(principal: str) -> dict[str, str]:
    """The Secret item that is ``principal``'s Kafka password, as the file settings read."""
    return {"key": f"SLUICE_KAFKA_SASL_PASSWORD_{principal.upper()}", "path": "SLUICE_KAFKA_SASL_PASSWORD"}


def _database_url(pod: str) -> dict[str, str]:
    """The Secret item that is ``pod``'s database URL (its role's), as the file settings read."""
    return {"key": f"SLUICE_DATABASE_URL_{DATABASE_ROLE[pod].upper()}", "path": "SLUICE_DATABASE_URL"}


def _pod_volumes(pod: str, kafka_user: str | None = None) -> list[dict[str, Any]]:
    secret_files = {
        "secretName": "sluice-secrets",
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
    return [{"name": "tmp", "emptyDir": {}}, {"name": "secrets", "secret": secret_files}]


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
    c["livenessProbe"] = {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 10}
    c["readinessProbe"] = {"httpGet": {"path": "/readyz", "port": "http"}, "periodSeconds": 5}
    c["startupProbe"] = {"httpGet": {"path": "/healthz", "port": "http"}, "failureThreshold": 30}
    return _manifest(
        "apps/v1",
        "Deployment",
        name,
        {
            "replicas": 2,
            "selector": {"matchLabels": _labels(name)},
            "template": {
                "metadata": {
                    "labels": _labels(name),
                    "annotations": {"prometheus.io/port": str(METRICS_PORTS.get(name, port))},
                },
                "spec": {
                    "automountServiceAccountToken": False,
                    "terminationGracePeriodSeconds": 30,
                    "securityContext": _pod_security(UID),
                    "containers": [c],
                    "volumes": _pod_volumes(name, name),
                },
            },
        },
        _skips(IMAGE_DIGEST_SKIP),
    )


# The broker: the release devstack.kafka_embedded runs (tests/unit/test_kafka_version.py).
KAFKA_IMAGE = "apache/kafka:4.1.2"
KAFKA_NODES = 3
KAFKA_UID = 1000  # appuser, who owns /opt/kafka in the image
# What checkov asks of the broker that its image cannot give, and why (docker/resources in
# apache/kafka: the start script refuses to run unless /opt/kafka/config is writable).
KAFKA_SKIPS = (
    "CKV_K8S_43=the digest of apache/kafka:4.1.2 was not looked up (no registry access where this"
    " was written); pin it as apache/kafka:4.1.2@sha256:<digest> from"
    " `docker buildx imagetools inspect apache/kafka:4.1.2`, keeping the tag that"
    " tests/unit/test_kafka_version.py reads",
    "CKV_K8S_22=the image's start script (/etc/kafka/docker/configure) writes server.properties"
    " and the log4j files into /opt/kafka/config and exits when it is not writable; Kafka also"
    " logs under /opt/kafka/logs. A read-only root needs those paths on volumes, untested here",
    "CKV_K8S_40=the image's files (/opt/kafka, its config directory included) belong to its user"
    " appuser, uid 1000, and are not group-writable: under another uid the start script exits",
)


def kafka() -> list[dict[str, Any]]:
    """Three KRaft nodes (broker and controller each), replication 3, min.insync.replicas 2:
    the cluster `make chaos` kills, pauses and restarts on one machine (devstack.chaos_kafka)."""
    voters = ",".join(f"{i}@kafka-{i}.kafka-nodes:9093" for i in range(KAFKA_NODES))
    env = {
        "KAFKA_PROCESS_ROLES": "broker,controller",
        # Every listener takes SASL/PLAIN and every request needs an ACL (common.acls), as on
        # devstack.kafka_embedded's SASL node (tests/integration/test_kafka_acls.py)
        "KAFKA_LISTENERS": "SASL_PLAINTEXT://:9092,CONTROLLER://:9093",
        "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
        "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "CONTROLLER:SASL_PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
        "KAFKA_INTER_BROKER_LISTENER_NAME": "SASL_PLAINTEXT",
        "KAFKA_SASL_ENABLED_MECHANISMS": "PLAIN",
        "KAFKA_SASL_MECHANISM_INTER_BROKER_PROTOCOL": "PLAIN",
        "KAFKA_SASL_MECHANISM_CONTROLLER_PROTOCOL": "PLAIN",
        "KAFKA_AUTHORIZER_CLASS_NAME": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "KAFKA_SUPER_USERS": f"User:{KAFKA_BROKER_USER}",
        "KAFKA_ALLOW_EVERYONE_IF_NO_ACL_FOUND": "false",
        # the users (user_<name>="<password>") and the node's own login: a file from a Secret
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
        # node.id and the advertised address from the pod's ordinal (kafka-0 -> 0)
        "command": ["sh", "-c"],
        "args": [
            'export KAFKA_NODE_ID="${HOSTNAME##*-}"'
            ' KAFKA_ADVERTISED_LISTENERS="SASL_PLAINTEXT://${HOSTNAME}.kafka-nodes:9092";'
            " exec /etc/kafka/docker/run"
        ],
        "env": [{"name": k, "value": v} for k, v in env.items()],
        "ports": [{"name": "kafka", "containerPort": 9092}, {"name": "controller", "containerPort": 9093}],
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
        ],
    }
    jaas = {
        "secretName": "sluice-kafka-jaas",
        "items": [{"key": "kafka_server_jaas.conf", "path": "kafka_server_jaas.conf"}],
        "defaultMode": 0o440,
    }
    labels = _labels("kafka")
    return [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": _meta("kafka-nodes", labels),
            "spec": {"clusterIP": "None", "selector": labels, "ports": [{"name": "kafka", "port": 9092}]},
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": _meta("kafka", labels),
            "spec": {"selector": labels, "ports": [{"name": "kafka", "port": 9092}]},
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
                        "containers": [container],
                        "volumes": [{"name": "jaas", "secret": jaas}],
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


def kafka_acls_job() -> dict[str, Any]:
    """``python -m sluice acls`` as the brokers' own principal: every service's ACLs
    (common.acls.plan). Idempotent; apply it with the StatefulSet, before the Deployments
    (they are refused until it completes: `kubectl wait --for=condition=complete
    job/sluice-kafka-acls`). Its pod holds the super user's password and nothing else."""
    c = _container("kafka-acls", 8000, ["acls"])
    c.pop("ports")
    c["env"].append({"name": "SLUICE_KAFKA_SASL_USERNAME", "value": KAFKA_BROKER_USER})
    broker_password = {"secretName": "sluice-secrets", "items": [_kafka_password(KAFKA_BROKER_USER)]}
    return _manifest(
        "batch/v1",
        "Job",
        "kafka-acls",
        {
            "backoffLimit": 10,  # the brokers may still be electing a controller
            "template": {
                "metadata": {"labels": _labels("kafka-acls")},
                "spec": {
                    "restartPolicy": "OnFailure",
                    "automountServiceAccountToken": False,
                    "securityContext": _pod_security(UID),
                    "containers": [c],
                    "volumes": [
                        {"name": "tmp", "emptyDir": {}},
                        {"name": "secrets", "secret": {**broker_password, "defaultMode": 0o440}},
                    ],
                },
            },
        },
        _skips(IMAGE_DIGEST_SKIP),
    )


def keda_kafka_auth() -> dict[str, Any]:
    """KEDA's Kafka scaler connects as ``User:keda`` (DESCRIBE on the consumed topics and
    their groups, common.acls): its SASL mode, user and password from the Secret
    sluice-keda-kafka (keys sasl=plaintext, username=keda, password)."""
    refs = [{"parameter": k, "name": "sluice-keda-kafka", "key": k} for k in ("sasl", "username", "password")]
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "TriggerAuthentication",
        "metadata": _meta("sluice-keda-kafka", LABELS),
        "spec": {"secretTargetRef": refs},
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
                "SLUICE_KAFKA_BOOTSTRAP": "kafka:9092",
                **KAFKA_SASL,  # each Deployment adds its principal (SLUICE_KAFKA_SASL_USERNAME)
                "SLUICE_KAFKA_FETCH_MAX_WAIT_MS": "100",
                "SLUICE_KAFKA_IDEMPOTENT_PRODUCER": "true",  # Apache Kafka: acks=all, no duplicate on retry
                "SLUICE_KAFKA_TOPIC_PARTITIONS": str(PARTITIONS),
                # The ingress in front of gateway and admin (contract 13.2): set its CIDRs (the
                # ingress controller's pods) in an overlay, and the one header it sets. Empty,
                # the TCP peer is the client: behind an ingress, every client is the ingress.
                "SLUICE_TRUSTED_PROXIES": "",
                "SLUICE_CLIENT_IP_HEADER": "X-Forwarded-For",
            },
        }
    ]
    job = _container("migrate", 8000, ["migrate"])
    job.pop("ports")
    files["migrate-job.yaml"] = [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": _meta(
                "sluice-migrate",
                _labels("migrate"),
                # Run before the Deployments roll: Argo CD's PreSync, Helm's pre-upgrade; with
                # kubectl, apply and `kubectl wait --for=condition=complete job/sluice-migrate`
                # first (docs/operations.md).
                {
                    "argocd.argoproj.io/hook": "PreSync",
                    "helm.sh/hook": "pre-install,pre-upgrade",
                    **_skips(IMAGE_DIGEST_SKIP),
                },
            ),
            "spec": {
                "backoffLimit": 3,
                "template": {
                    "metadata": {"labels": _labels("migrate")},
                    "spec": {
                        "restartPolicy": "OnFailure",
                        "automountServiceAccountToken": False,
                        "securityContext": _pod_security(UID),
                        "containers": [job],
                        "volumes": _pod_volumes("migrate"),
                    },
                },
            },
        }
    ]
    files["kafka-acls-job.yaml"] = [kafka_acls_job()]
    files["deployments.yaml"] = [deployment(n, p) for n, (p, _, _) in SERVICES.items()]
    files["services.yaml"] = [
        _manifest(
            "v1",
            "Service",
            n,
            {"selector": _labels(n), "ports": [{"name": "http", "port": p, "targetPort": "http"}]},
        )
        for n, (p, _, _) in SERVICES.items()
    ]
    files["hpa.yaml"] = [
        _manifest(
            "autoscaling/v2",
            "HorizontalPodAutoscaler",
            n,
            {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": f"sluice-{n}"},
                "minReplicas": 2,
                "maxReplicas": 10,
                "metrics": [
                    {
                        "type": "Resource",
                        "resource": {
                            "name": "cpu",
                            "target": {"type": "Utilization", "averageUtilization": 60},
                        },
                    }
                ],
            },
        )
        for n, (_, http, _) in SERVICES.items()
        if http
    ]
    files["keda.yaml"] = [
        _manifest(
            "keda.sh/v1alpha1",
            "ScaledObject",
            n,
            {
                "scaleTargetRef": {"name": f"sluice-{n}"},
                "minReplicaCount": 1,
                "maxReplicaCount": PARTITIONS,  # a group cannot use more consumers than partitions
                "triggers": [
                    {
                        "type": "kafka",
                        "metadata": {
                            # KEDA's operator connects from its own namespace
                            "bootstrapServers": f"kafka.{NAMESPACE}.svc:9092",
                            "consumerGroup": f"sluice-{n}",
                            "topic": topic,
                            "lagThreshold": "100",
                        },
                        "authenticationRef": {"name": "sluice-keda-kafka"},
                    }
                ],
            },
        )
        for n, (_, _, topic) in SERVICES.items()
        if topic
    ] + [keda_kafka_auth()]
    files["pdb.yaml"] = [
        _manifest(
            "policy/v1",
            "PodDisruptionBudget",
            n,
            {"minAvailable": 1, "selector": {"matchLabels": _labels(n)}},
        )
        for n in SERVICES
    ]
    files["networkpolicy.yaml"] = [
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": _meta("sluice-internal-only", LABELS),
            "spec": {  # consumers take traffic only from inside the suite (metrics, health)
                "podSelector": {"matchExpressions": [_not_http()]},
                "policyTypes": ["Ingress"],
                "ingress": [{"from": [{"podSelector": {"matchLabels": LABELS}}]}],
            },
        },
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": _meta("sluice-http-ingress", LABELS),
            "spec": {  # gateway and admin take traffic from outside, on their port only
                "podSelector": {"matchExpressions": [{**_not_http(), "operator": "In"}]},
                "policyTypes": ["Ingress"],
                "ingress": [{"ports": [{"port": "http"}]}],
            },
        },
    ]
    return files


def _not_http() -> dict[str, Any]:
    http = sorted(n for n, (_, h, _) in SERVICES.items() if h)
    return {"key": "app.kubernetes.io/name", "operator": "NotIn", "values": http}


def write_base() -> None:
    out = HERE / "base"
    out.mkdir(exist_ok=True)
    files = base()
    for name, docs in files.items():
        header = "# Generated by deploy/k8s/generate.py: edit the generator, then run it.\n"
        (out / name).write_text(header + yaml.safe_dump_all(docs, sort_keys=False))
    kust = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": sorted(files),
    }
    (out / "kustomization.yaml").write_text(yaml.safe_dump(kust, sort_keys=False))


def _merge(into: Any, patch: Any) -> Any:
    if isinstance(into, dict) and isinstance(patch, dict):
        out = dict(into)
        for k, v in patch.items():
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


def render(directory: Path) -> list[dict[str, Any]]:
    """The resources of a kustomization directory: its resources (files or directories) with
    its ``patches`` applied, each patch matched to a resource by kind and name, then its
    ``images`` set (name, newName, newTag, digest)."""
    kust = yaml.safe_load((directory / "kustomization.yaml").read_text())
    docs: list[dict[str, Any]] = []
    for res in kust.get("resources", []):
        path = directory / res
        docs += render(path) if path.is_dir() else [d for d in yaml.safe_load_all(path.read_text()) if d]
    for p in kust.get("patches", []):
        for patch in yaml.safe_load_all((directory / p["path"]).read_text()):
            key = (patch["kind"], patch["metadata"]["name"])
            hits = [
                i
                for i, d in enumerate(docs)
                if (d["kind"], d["metadata"]["name"]) == key
                and patch["metadata"].get("namespace") in (None, d["metadata"].get("namespace"))
            ]
            if not hits:
                raise SystemExit(f"{directory}: patch {p['path']} matches no {key}")
            for i in hits:
                docs[i] = _merge(docs[i], patch)
    for entry in kust.get("images", []):
        _set_images(docs, entry)
    return docs


if __name__ == "__main__":
    if sys.argv[1:2] == ["render"]:
        print(yaml.safe_dump_all(render(HERE / "overlays" / sys.argv[2]), sort_keys=False), end="")
    else:
        write_base()

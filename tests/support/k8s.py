"""deploy/k8s/generate.py loaded as a module (it is a script, not a package), for the tests that
read the manifests it writes and renders; and what an operator supplies to a production install
(docs/operations/deploy.md, "Required inputs"), made fresh once per run: the overlays' inputs
file and the Secrets' values, which match (the verify keys are the signing keys' public keys)."""

from __future__ import annotations

import functools
import importlib.util
import secrets
import tempfile
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from common.authority import key_entries, new_seed_setting, new_signing_setting, public_entry, verify_setting
from common.keyring import new_key_setting

K8S = Path(__file__).resolve().parents[2] / "deploy" / "k8s"
SERVICES = ("gateway", "admin", "ledger", "compliance", "webhooks")


def generator() -> Any:
    spec = importlib.util.spec_from_file_location("k8s_generate", K8S / "generate.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@functools.cache
def secret_values() -> dict[str, str]:
    """A value for every key the Secrets hold, each one the settings loader accepts."""
    token = functools.partial(secrets.token_urlsafe, 32)
    values = {
        "SLUICE_ADMIN_TOKEN": f"alice:approver={token()},bob:approver={token()}",
        "SLUICE_JWT_SECRET": token(),
        "SLUICE_ONBOARDING_SECRET": token(),
        "SLUICE_ENCRYPTION_KEYS": new_key_setting(),
        "SLUICE_GATEWAY_CACHE_KEY": new_key_setting(),
        "SLUICE_JOURNAL_ANCHOR_KEY": new_seed_setting("anchor-1"),
        "SLUICE_COMPLIANCE_SIGNING_KEY": new_signing_setting("compliance"),
        "SLUICE_ADMIN_SIGNING_KEY": new_signing_setting("admin"),
        "SLUICE_LEDGER_SIGNING_KEY": new_signing_setting("ledger"),
    }
    for role in (*SERVICES, "migrations"):
        values[f"SLUICE_DATABASE_URL_{role.upper()}"] = (
            f"postgresql+asyncpg://sluice_{role}:{token()}@sluice-database:5432/sluice"
        )
    for pod in ("gateway", "admin"):
        values[f"SLUICE_REDIS_URL_{pod.upper()}"] = f"redis://{pod}:{token()}@valkey:6379/0"
    for principal in (*SERVICES, "broker"):
        values[f"SLUICE_KAFKA_SASL_PASSWORD_{principal.upper()}"] = token()
    return values


# The Secrets Strimzi's User Operator writes, one per KafkaUser (deploy/k8s/strimzi.py,
# USER_SECRET_PREFIX): its generated SCRAM password under the key ``password``.
KAFKA_USER_SECRET_PREFIX = "sluice-kafka-user-"


@functools.cache
def secret_value(secret: str, key: str) -> str:
    """The value of ``key`` in the Secret ``secret``: an operator's (:func:`secret_values`), or
    the password the User Operator generates for a KafkaUser (32 letters and digits)."""
    if secret.startswith(KAFKA_USER_SECRET_PREFIX) and key == "password":
        return "".join(
            secrets.choice("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
            for _ in range(32)
        )
    return secret_values()[key]


def input_values() -> dict[str, str]:
    """The required inputs, matching :func:`secret_values`' signing keys."""
    s = secret_values()
    kid, seed = key_entries(s["SLUICE_JOURNAL_ANCHOR_KEY"], "SLUICE_JOURNAL_ANCHOR_KEY")[0]
    return {
        "SLUICE_AUTHORITY_VERIFY_KEYS": verify_setting(
            s["SLUICE_COMPLIANCE_SIGNING_KEY"], s["SLUICE_ADMIN_SIGNING_KEY"], s["SLUICE_LEDGER_SIGNING_KEY"]
        ),
        "SLUICE_JOURNAL_ANCHOR_VERIFY_KEYS": public_entry(kid, Ed25519PrivateKey.from_private_bytes(seed)),
        "SLUICE_TRUSTED_PROXIES": "10.42.0.0/16",
        "SLUICE_PUBLIC_BASE_URL": "https://pay.example.com",
    }


@functools.cache
def inputs_file() -> Path:
    """:func:`input_values` as the inputs.env an operator writes."""
    path = Path(tempfile.mkdtemp(prefix="sluice-k8s-")) / "inputs.env"
    path.write_text("".join(f"{k}={v}\n" for k, v in input_values().items()))
    return path


def render(directory: Path) -> list[dict[str, Any]]:
    """An overlay (or the base) rendered as an operator who supplied the inputs renders it."""
    docs: list[dict[str, Any]] = generator().render(directory, inputs_file())
    return docs

"""One settings object builds every Kafka client (common.kafka; docs/operations.md, "Kafka
client security"); the arguments each kind of client receives, and the start refused on an
unknown or missing value."""

from __future__ import annotations

import ssl
import subprocess
import sys

import pytest
from faststream.security import BaseSecurity, SASLPlaintext, SASLScram256, SASLScram512
from pydantic import SecretStr

from common import kafka
from common.settings import Settings
from tools.stack.processes import ROOT, python_env

pytestmark = pytest.mark.unit
SASL = "SASL_SSL"


def _settings(**kw: str) -> Settings:
    if "kafka_sasl_password" in kw:
        kw["kafka_sasl_password"] = SecretStr(kw["kafka_sasl_password"])  # type: ignore[assignment]
    return Settings(kafka_bootstrap="k1:9093,k2:9093", **kw)  # type: ignore[arg-type]


def test_plaintext_is_the_default_and_carries_only_the_bootstrap() -> None:
    s = _settings()
    assert kafka.problems(s) == []
    # every address its own list entry: aiokafka looks a string up as one host name
    assert kafka.client_args(s) == {
        "bootstrap_servers": ["k1:9093", "k2:9093"],
        "security_protocol": "PLAINTEXT",
    }
    assert kafka.broker_security(s) is None


def test_ssl_with_a_ca_file(tmp_path: pytest.TempPathFactory) -> None:
    ca = ssl.get_default_verify_paths().cafile or ssl.get_default_verify_paths().openssl_cafile
    s = _settings(kafka_security_protocol="SSL", kafka_ssl_cafile=ca)
    args = kafka.client_args(s)
    assert args["security_protocol"] == "SSL" and isinstance(args["ssl_context"], ssl.SSLContext)
    assert "sasl_mechanism" not in args
    sec = kafka.broker_security(s)
    assert type(sec) is BaseSecurity and sec.use_ssl and sec.ssl_context is not None


@pytest.mark.parametrize(
    ("mechanism", "kind"),
    [("PLAIN", SASLPlaintext), ("SCRAM-SHA-256", SASLScram256), ("SCRAM-SHA-512", SASLScram512)],
)
@pytest.mark.parametrize("protocol", ["SASL_PLAINTEXT", "SASL_SSL"])
def test_sasl_reaches_every_client(protocol: str, mechanism: str, kind: type) -> None:
    s = _settings(
        kafka_security_protocol=protocol,
        kafka_sasl_mechanism=mechanism,
        kafka_sasl_username="sluice",
        kafka_sasl_password="s3cret",
    )
    assert kafka.problems(s) == []
    args = kafka.client_args(s)
    assert (args["sasl_mechanism"], args["sasl_plain_username"], args["sasl_plain_password"]) == (
        mechanism,
        "sluice",
        "s3cret",
    )
    assert ("ssl_context" in args) == (protocol == "SASL_SSL")
    sec = kafka.broker_security(s)
    assert isinstance(sec, kind) and sec.use_ssl == (protocol == "SASL_SSL")


@pytest.mark.parametrize(
    ("kw", "named"),
    [
        ({"kafka_security_protocol": "TLS"}, "SLUICE_KAFKA_SECURITY_PROTOCOL"),
        (
            {"kafka_security_protocol": "SASL_SSL", "kafka_sasl_mechanism": "GSSAPI"},
            "SLUICE_KAFKA_SASL_MECHANISM",
        ),
        (
            {"kafka_security_protocol": "SASL_SSL", "kafka_sasl_mechanism": "PLAIN"},
            "SLUICE_KAFKA_SASL_USERNAME",
        ),
        ({"kafka_sasl_mechanism": "PLAIN"}, "SLUICE_KAFKA_SASL_MECHANISM"),
        # two in-sync replicas of a one-replica topic: every write would be refused
        ({"kafka_min_insync_replicas": 2}, "SLUICE_KAFKA_MIN_INSYNC_REPLICAS"),
        ({"kafka_replication_factor": 3, "kafka_min_insync_replicas": 0}, "SLUICE_KAFKA_MIN_INSYNC_REPLICAS"),
    ],
)
def test_a_wrong_value_is_named(kw: dict[str, str], named: str) -> None:
    assert any(named in p for p in kafka.problems(_settings(**kw)))


def test_a_service_refuses_to_start_naming_the_setting() -> None:
    env = {k: v for k, v in python_env({}).items() if not k.startswith("SLUICE_")}
    env |= {"SLUICE_ENV": "development", "SLUICE_KAFKA_SECURITY_PROTOCOL": "TLS"}
    done = subprocess.run(
        [sys.executable, "-m", "ledger"], env=env, cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and "SLUICE_KAFKA_SECURITY_PROTOCOL" in done.stderr, done.stderr[-1500:]


def test_the_producer_is_idempotent_with_acks_all_unless_switched_off() -> None:
    """Apache Kafka (the default broker): every service's producer gets
    enable_idempotence and acks=all; SLUICE_KAFKA_IDEMPOTENT_PRODUCER=false (a broker without
    it, Tansu) gives leader acks."""
    from common.broker import create_broker

    lz4 = {"compression_type": "lz4"}
    assert kafka.producer_args(_settings()) == {"enable_idempotence": True, "acks": "all", **lz4}
    off = Settings(kafka_idempotent_producer=False)
    assert kafka.producer_args(off) == {"enable_idempotence": False, "acks": 1, **lz4}
    for settings, expected in ((_settings(), (True, "all")), (off, (False, 1))):
        given = create_broker(settings, "test")._connection_kwargs  # what aiokafka's producer gets
        assert (given["enable_idempotence"], given["acks"], given["compression_type"]) == (*expected, "lz4")
    plain = Settings(kafka_compression="")
    assert "compression_type" not in kafka.producer_args(plain)


def test_the_broker_is_given_each_bootstrap_address() -> None:
    """A comma-separated SLUICE_KAFKA_BOOTSTRAP reaches FastStream's broker as its addresses
    (seen: a three-node bootstrap given as one string, every service failed to start)."""
    from common.broker import create_broker

    given = create_broker(_settings(), "test")._connection_kwargs
    assert list(given["bootstrap_servers"]) == ["k1:9093", "k2:9093"]


def test_only_a_broker_started_for_the_tests_compiles_with_the_first_tier_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tools.stack import kafka as embedded

    monkeypatch.delenv(embedded.JIT_SETTING, raising=False)
    assert embedded.QUICK_JIT not in embedded.jvm_flags()  # make run and make bench: both tiers
    monkeypatch.setenv(embedded.JIT_SETTING, "c1")
    assert embedded.jvm_flags() == [*embedded.JVM_FLAGS, embedded.QUICK_JIT]
    assert embedded.QUICK_JIT not in embedded.JVM_FLAGS

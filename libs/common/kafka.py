"""Every Kafka client of the suite is configured here, from one set of settings, so that no
client is built with arguments of its own (docs/operations.md, "Kafka client security";
safir's ``KafkaConnectionSettings`` is the model): FastStream's broker (through its
``security`` object) and the raw aiokafka consumers and admin clients (keyword arguments).

- ``SLUICE_KAFKA_SECURITY_PROTOCOL`` [``PLAINTEXT``]: ``SSL``, ``SASL_PLAINTEXT``, ``SASL_SSL``;
- ``SLUICE_KAFKA_SASL_MECHANISM``: ``PLAIN``, ``SCRAM-SHA-256``, ``SCRAM-SHA-512`` (SASL only);
- ``SLUICE_KAFKA_SASL_USERNAME`` / ``SLUICE_KAFKA_SASL_PASSWORD`` (SASL only);
- ``SLUICE_KAFKA_SSL_CAFILE``: the CA bundle that signs the brokers' certificates (SSL only;
  the system's CAs when empty).

:func:`problems` names every setting that is unknown or missing; a service refuses to start on
any (``common.settings.load_settings``).
"""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

from aiokafka.errors import KafkaError
from faststream.security import BaseSecurity, SASLPlaintext, SASLScram256, SASLScram512

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
ADMIN_RETRY_S = 30.0
T = TypeVar("T")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


def problems(settings: Any) -> list[str]:
    """What is wrong with the Kafka client settings, each naming its setting."""
    out = []
    protocol, mechanism = settings.kafka_security_protocol, settings.kafka_sasl_mechanism
    if protocol not in PROTOCOLS:
        out.append(f"SLUICE_KAFKA_SECURITY_PROTOCOL must be one of {', '.join(PROTOCOLS)}, not {protocol!r}")
    if protocol.startswith("SASL_"):
        if mechanism not in MECHANISMS:
            out.append(
                f"SLUICE_KAFKA_SASL_MECHANISM must be one of {', '.join(MECHANISMS)}, not {mechanism!r}"
            )
        if not settings.kafka_sasl_username:
            out.append("SLUICE_KAFKA_SASL_USERNAME is required with SASL")
        if not settings.kafka_sasl_password.get_secret_value():
            out.append("SLUICE_KAFKA_SASL_PASSWORD is required with SASL")
    elif mechanism:
        out.append(f"SLUICE_KAFKA_SASL_MECHANISM is set but SLUICE_KAFKA_SECURITY_PROTOCOL is {protocol}")
    replicas, in_sync = settings.kafka_replication_factor, settings.kafka_min_insync_replicas
    if not 1 <= in_sync <= replicas:
        out.append(
            f"SLUICE_KAFKA_MIN_INSYNC_REPLICAS must be between 1 and SLUICE_KAFKA_REPLICATION_FACTOR"
            f" ({replicas}), not {in_sync}"
        )
    return out


def _ssl_context(settings: Any) -> ssl.SSLContext | None:
    if not settings.kafka_security_protocol.endswith("SSL"):
        return None
    return ssl.create_default_context(cafile=settings.kafka_ssl_cafile or None)


def bootstrap_servers(settings: Any) -> list[str]:
    """``SLUICE_KAFKA_BOOTSTRAP`` as the list aiokafka wants: it takes a string as one address,
    so ``k1:9092,k2:9092`` given as is was looked up as one host name and never answered."""
    return [s.strip() for s in str(settings.kafka_bootstrap).split(",") if s.strip()]


def client_args(settings: Any) -> dict[str, Any]:
    """Keyword arguments for aiokafka's ``AIOKafkaConsumer``, ``AIOKafkaProducer`` and
    ``AIOKafkaAdminClient``."""
    args: dict[str, Any] = {
        "bootstrap_servers": bootstrap_servers(settings),
        "security_protocol": settings.kafka_security_protocol,
    }
    context = _ssl_context(settings)
    if context is not None:
        args["ssl_context"] = context
    if settings.kafka_security_protocol.startswith("SASL_"):
        args["sasl_mechanism"] = settings.kafka_sasl_mechanism
        args["sasl_plain_username"] = settings.kafka_sasl_username
        args["sasl_plain_password"] = settings.kafka_sasl_password.get_secret_value()
    return args


def broker_security(settings: Any) -> BaseSecurity | None:
    """FastStream's security object for the same settings (None for PLAINTEXT)."""
    protocol, context = settings.kafka_security_protocol, _ssl_context(settings)
    if protocol == "PLAINTEXT":
        return None
    if protocol == "SSL":
        return BaseSecurity(ssl_context=context, use_ssl=True)
    user, password = settings.kafka_sasl_username, settings.kafka_sasl_password.get_secret_value()
    use_ssl = protocol == "SASL_SSL"
    kind = {"PLAIN": SASLPlaintext, "SCRAM-SHA-256": SASLScram256, "SCRAM-SHA-512": SASLScram512}
    return kind[settings.kafka_sasl_mechanism](user, password, ssl_context=context, use_ssl=use_ssl)


def producer_args(settings: Any) -> dict[str, Any]:
    """Delivery settings of every producer: idempotent with acks=all where the broker supports
    it (``SLUICE_KAFKA_IDEMPOTENT_PRODUCER``), else acks from the partition leader (Tansu); every
    batch compressed as ``SLUICE_KAFKA_COMPRESSION`` says (lz4: the records shrink to 37-69 % of
    their size, docs/performance/history.md, round 6)."""
    compression = {"compression_type": settings.kafka_compression} if settings.kafka_compression else {}
    if settings.kafka_idempotent_producer:
        return {"enable_idempotence": True, "acks": "all", **compression}
    return {"enable_idempotence": False, "acks": 1, **compression}


@contextlib.asynccontextmanager
async def admin_client(**admin_args: Any) -> AsyncIterator[Any]:
    """An aiokafka admin client (``client_args(settings)`` and any of its own options),
    started, and closed however the block ends."""
    from aiokafka.admin import AIOKafkaAdminClient

    admin = AIOKafkaAdminClient(**admin_args)
    await admin.start()
    try:
        yield admin
    finally:
        await admin.close()


async def partition_leaders(topic: str, **admin_args: Any) -> dict[int, int]:
    """``topic``'s partitions and each one's leader node, as the cluster reports them now (a
    consumer without a group or a subscription does not fetch a topic's metadata itself)."""
    async with admin_client(**admin_args) as admin:
        found = await admin_retry(lambda: admin.describe_topics([topic]))
    return {p["partition"]: p["leader"] for t in found if t["error_code"] == 0 for p in t["partitions"]}


async def admin_retry(call: Callable[[], Awaitable[T]]) -> T:
    """An admin client's request, asked again while its error is retriable. The admin client
    sends each request to one broker it knows of; one that is down answers NodeNotReadyError
    and the next attempt asks another (make chaos, 2026-11-26: a gateway restarted while a
    broker of three was killed exited at start). Up to ``ADMIN_RETRY_S``; a non-retriable error
    (authorization, a bad configuration) is raised at once."""
    from tenacity import AsyncRetrying, retry_if_exception, stop_after_delay, wait_exponential_jitter

    async for attempt in AsyncRetrying(
        retry=retry_if_exception(lambda e: isinstance(e, KafkaError) and e.retriable),
        stop=stop_after_delay(ADMIN_RETRY_S),
        wait=wait_exponential_jitter(multiplier=0.2, max=2.0),
        reraise=True,
    ):
        with attempt:
            return await call()
    raise AssertionError("unreachable: tenacity re-raises the last error")  # pragma: no cover

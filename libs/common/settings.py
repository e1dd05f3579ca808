"""Settings shared by every service (environment, prefix ``SLUICE_``).

Read once in each service's lifespan via :func:`load_settings`; never at import.
"""

from __future__ import annotations

import base64
import logging
import os
import secrets
from collections.abc import Mapping
from decimal import Decimal
from functools import cached_property
from pathlib import Path
from typing import Literal, NoReturn

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from common.authority import (
    AuthorityError,
    Signer,
    SigningKey,
    VerifyKeys,
    key_entries,
    new_signing_setting,
    public_entry,
)
from common.cache_mac import CacheMac, weak_cache_keys
from common.clientaddr import Network, parse_networks
from common.kafka import problems as kafka_problems
from common.keyring import KeyRing, KeyRingError, new_key_setting
from common.secret_strength import ADVICE, MIN_SECRET_CHARS, weak_admin_tokens, weakness

# The secrets every service must be given explicitly in production (docs/security.md,
# "Settings that matter").
SECRET_SETTINGS = {
    "admin_token": "SLUICE_ADMIN_TOKEN",  # a setting's name  # nosec B105
    "jwt_secret": "SLUICE_JWT_SECRET",  # a setting's name  # nosec B105
    "onboarding_secret": "SLUICE_ONBOARDING_SECRET",  # a setting's name  # nosec B105
    "encryption_keys": "SLUICE_ENCRYPTION_KEYS",
    # Ed25519 signing keys of the deciders (common.authority): compliance's and admin's
    # commands, the ledger's releases and events
    "compliance_signing_key": "SLUICE_COMPLIANCE_SIGNING_KEY",  # a setting's name  # nosec B105
    "admin_signing_key": "SLUICE_ADMIN_SIGNING_KEY",  # a setting's name  # nosec B105
    "ledger_signing_key": "SLUICE_LEDGER_SIGNING_KEY",  # a setting's name  # nosec B105
    "gateway_cache_key": "SLUICE_GATEWAY_CACHE_KEY",
}
# The secrets each service uses, and so requires and is given; it never holds another's:
# load_settings(service) blanks them (docs/security.md, "Database roles and per-service
# secrets"). The gateway verifies access tokens, signs onboarding links and seals webhook
# secrets; admin authenticates operators and issues access tokens; webhooks opens the webhook
# secrets it signs with; the ledger alone signs the journal's anchors, and with another key
# the allowance it gives back and its events; compliance signs its decisions and admin its
# operator commands.
SERVICE_SECRETS: dict[str, tuple[str, ...]] = {
    "gateway": (
        "SLUICE_JWT_SECRET",
        "SLUICE_ONBOARDING_SECRET",
        "SLUICE_ENCRYPTION_KEYS",
        "SLUICE_GATEWAY_CACHE_KEY",
    ),
    "admin": ("SLUICE_ADMIN_TOKEN", "SLUICE_JWT_SECRET", "SLUICE_ADMIN_SIGNING_KEY"),
    "webhooks": ("SLUICE_ENCRYPTION_KEYS",),
    "ledger": ("SLUICE_JOURNAL_ANCHOR_KEY", "SLUICE_LEDGER_SIGNING_KEY"),
    "compliance": ("SLUICE_COMPLIANCE_SIGNING_KEY",),
}
# The services that verify a decider's signature (docs/security.md, "Who writes each topic"),
# and whose: they need SLUICE_AUTHORITY_VERIFY_KEYS (public keys, not secrets) holding those
# signers' keys and refuse to start without them. The ledger checks the commands it applies;
# compliance admin's policy commands and the ledger's releases and usage signals; webhooks the
# events it stores and delivers.
AUTHORITY_VERIFIERS: dict[str, frozenset[Signer]] = {
    "ledger": frozenset({"compliance", "admin"}),
    "compliance": frozenset({"admin", "ledger"}),
    "webhooks": frozenset({"ledger"}),
}


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="SLUICE_", extra="ignore")

    # ``development`` only where something local sets it (``make run``, the tests).
    env: Literal["development", "production"] = "production"
    instance_id: str = ""

    database_url: str = "postgresql+asyncpg://postgres@127.0.0.1:5432/sluice"
    redis_url: str = "redis://127.0.0.1:6379/0"
    kafka_bootstrap: str = "127.0.0.1:9092"
    # Client security (docs/operations.md, "Kafka client security"; common.kafka): checked by
    # common.kafka.problems at start.
    kafka_security_protocol: str = "PLAINTEXT"
    kafka_sasl_mechanism: str = ""
    kafka_sasl_username: str = ""
    kafka_sasl_password: SecretStr = SecretStr("")
    kafka_ssl_cafile: str = ""
    # Apache Kafka: an idempotent producer with acks=all, so a retried send is written once and
    # an acknowledged record survives a leader change. On by default since every run is on
    # Apache Kafka; off only for a broker without it (Tansu).
    kafka_idempotent_producer: bool = True
    # Compression of every record batch a service produces ("" for none); the consumers
    # decompress whatever codec a batch names (aiokafka's lz4 through cramjam).
    kafka_compression: Literal["", "lz4", "gzip", "snappy", "zstd"] = "lz4"
    topic_prefix: str = "sluice"
    db_pool_size: int = 10

    # Kafka consumer tuning. Apache Kafka answers a waiting fetch as soon as a record arrives
    # (fetch.min.bytes 1), so a long wait costs no latency and saves the idle fetch loop's CPU
    # on both sides. (On Tansu, which answered only when the wait expired, 10 ms was the trade.)
    kafka_fetch_max_wait_ms: int = 500
    # Consumers off the request path (events feeding webhooks and cap usage, the gateways'
    # control topic) poll less often: an idle stack's fetch loop is most of its broker's CPU.
    # The wait is paid only after a rewind (a failed batch read again waits for the fetch in
    # flight), which off the request path is a delay nobody waits on.
    kafka_background_fetch_max_wait_ms: int = 2000
    # The events topic's consumers (webhooks' deliveries, compliance's cap usage) fill their
    # batches: the broker holds each of their fetches until this many bytes are there or this
    # long has passed (fetch.min.bytes, fetch.max.wait.ms), so under load one cycle (fetch,
    # decode, transaction, offset) serves a batch, not a record or two. An event waits at most
    # the linger before its delivery starts; an idle consumer fetches once per linger.
    kafka_linger_fetch_wait_ms: int = 500
    kafka_linger_fetch_min_bytes: int = 512 * 1024
    kafka_session_timeout_ms: int = 10000
    kafka_heartbeat_interval_ms: int = 1000
    kafka_max_records: int = 200
    # How long a request-path subscriber's poll waits for its first records (common.batchpoll
    # returns them at once): it only sets how often an idle subscriber wakes.
    kafka_batch_timeout_ms: int = 500
    # Processed offsets are committed at most this often per subscriber (common.broker.Commits),
    # and before a rebalance takes the partitions (CommitOnRevoke). Every 100 ms was 1.15
    # records on __consumer_offsets per transfer at 100 transfers/s, every second 0.15-0.20
    # (0.20 when the door refused a third of them: the commits come per second, not per
    # transfer); a consumer killed loses at most this much progress, read again by the new
    # owner and answered from its inbox.
    kafka_commit_interval_ms: int = 2000
    kafka_topic_partitions: int = 6
    kafka_replication_factor: int = 1  # topics `python -m sluice topics` creates (3 on a real cluster)
    # Of the topics it creates: the replicas that must have a write before it is acknowledged
    # (acks=all), so that one broker lost loses nothing acknowledged (2 with 3 replicas).
    kafka_min_insync_replicas: int = 1
    # Whether a service creates the shared topics it finds missing at start (make run, compose,
    # the tests). Off where the operator's topics Job owns them (deploy/k8s): a service then
    # waits kafka_topics_wait_s for them and never creates one, so no topic is ever made with a
    # service's settings (one replica) instead of the cluster's.
    kafka_create_topics: bool = True
    kafka_topics_wait_s: float = 120.0
    kafka_retention_ms: int = 7 * 86400 * 1000  # of the topics it creates: the inboxes are the record
    consumer_max_attempts: int = 3
    # Every call to a store is bounded, so that nothing hangs (docs/failure-model.md, "Bounded
    # calls"): a store that does not answer in time is a transient fault (consumers wait it out;
    # the gateway answers 503 with Retry-After). Above the session timeout: a JoinGroup request
    # legitimately waits for a rebalance.
    kafka_request_timeout_ms: int = 15000
    kafka_publish_timeout_s: float = 2.0  # a request's publish: then 503, never a hang
    db_connect_timeout_s: float = 2.0
    # How long a store check may fail before /readyz takes the process out of service
    # (common.health.Blips): a failover or a leader election is shorter, and is waited out by
    # the calls' own bounds; a cache (Valkey) never takes it out.
    readiness_grace_s: float = 10.0
    db_command_timeout_s: float = 10.0
    # With several hosts in DATABASE_URL: how often each service checks that only one of them
    # accepts writes (common.db.Fencing; sluice_database_writable_hosts;
    # docs/operations/fencing.md).
    db_fencing_interval_s: float = 30.0
    redis_timeout_s: float = 1.0

    gateway_host: str = "127.0.0.1"
    gateway_port: int = 8000
    # The gateway's /metrics, off the partner port (docs/operations.md, "Metrics"); host "" =
    # gateway_host.
    gateway_metrics_host: str = ""
    gateway_metrics_port: int = 8010
    admin_host: str = "127.0.0.1"
    admin_port: int = 8001
    # Consumers serve health (and metrics) on these; 0.0.0.0 inside a container.
    ledger_host: str = "127.0.0.1"
    ledger_port: int = 8011
    compliance_host: str = "127.0.0.1"
    compliance_port: int = 8012
    webhooks_host: str = "127.0.0.1"
    webhooks_port: int = 8013

    admin_token: SecretStr = SecretStr("")
    public_base_url: str = "http://127.0.0.1:8000"
    gateway_timeout_s: float = 10.0
    # The gateway's revocation floor (gateway.revocations): PostgreSQL read every poll; cached
    # credentials believed only while the last successful poll started within the trust
    # window, which is therefore the longest a revocation can take to bite on any gateway.
    gateway_revocation_poll_s: float = 2.0
    gateway_revocation_trust_s: float = 10.0
    # Admission (gateway.door.admission, docs/performance/overload.md): commands in flight per
    # gateway instance and per tenant; beyond, 503 overloaded at once. Sized from make bench
    # (docs/performance).
    max_in_flight: int = 128
    tenant_max_in_flight: int = 64
    # The door (gateway.door.asgi): the bounds above are ceilings; under them the limit adapts
    # to measured latency (Gradient2, from the initial limit, never below the minimum), windows
    # averaging over the target latency shrink it, and an event loop lagging over
    # admission_lag_target_s for admission_lag_interval_s refuses new work. Reads have a lane of
    # their own; sandbox work sees admission_sandbox_share of the limit while live work is in
    # flight.
    admission_initial_limit: int = 20
    admission_min_limit: int = 8
    admission_target_latency_s: float = 0.4
    # Gradient2's latency tolerance and growth step (Netflix: 1.5 and 4); a simulated 2x
    # overload (docs/performance/overload.md) kept latency within the target with more goodput at 2.0 and 8.
    admission_tolerance: float = 2.0
    admission_queue_size: float = 8.0
    admission_lag_target_s: float = 0.005
    admission_lag_interval_s: float = 0.1
    admission_sandbox_share: float = 0.75
    read_max_in_flight: int = 256
    read_tenant_max_in_flight: int = 128
    # A request in flight holds its Idempotency-Key for the command's deadline plus this
    # margin; after that a retry on any gateway runs it again (downstream dedupe: one effect).
    idempotency_lease_margin_s: float = 5.0
    idempotency_ttl_s: int = 86400
    default_rate_limit_per_minute: int = 600
    onboarding_rate_limit_per_minute: int = 60  # per client IP on the public signup pages
    # Failed authentications (unknown keys, bad tokens, wrong operator tokens) per client
    # address and minute before it is answered 429 without any lookup (common.authfail).
    auth_failure_limit_per_minute: int = 30
    max_body_bytes: int = 65536

    jwt_secret: SecretStr = SecretStr("")
    jwt_issuer: str = "sluice"
    onboarding_secret: SecretStr = SecretStr("")
    # ``kid:base64key,...``: the first key seals, every key opens (see common.keyring).
    encryption_keys: SecretStr = SecretStr("")
    # ``kid:base64key,...`` (32-byte keys), the gateway only: the MAC on every record it trusts
    # from Valkey (common.cache_mac: Valkey is a cache, never a root of trust). The first key
    # signs, every key verifies.
    gateway_cache_key: SecretStr = SecretStr("")
    # CIDRs whose X-Forwarded-For / Forwarded headers are believed; empty: the TCP peer is
    # the client address (IP allowlists, per-address limits).
    trusted_proxies: str = ""
    # The one header the trusted proxies set; every other forwarding header is ignored
    # (docs/security.md, "Settings that matter").
    client_ip_header: Literal["X-Forwarded-For", "X-Real-IP", "Forwarded"] = "X-Forwarded-For"

    webhooks_allow_private_targets: bool = False
    webhooks_retry_schedule: str = "5,300,1800,7200,18000,36000,36000"
    webhooks_timeout_s: float = 15.0
    webhooks_jitter: float = 0.1
    webhooks_disable_after_s: int = 5 * 86400
    webhooks_poll_s: float = 0.5
    # Group commit: once an attempt finished, the delivery worker waits up to this long for
    # the others in flight before its next turn records them together (a turn's round trips
    # cost the same for one outcome as for sixteen).
    webhooks_linger_s: float = 0.005
    # Deliveries (and connections) in flight per endpoint, across all webhooks processes. One
    # endpoint drains at most this many per (answer time + a turn): 32 reaches 500/s at an
    # endpoint answering in 50 ms (services/webhooks/README.md).
    webhooks_endpoint_concurrency: int = 32
    webhooks_max_in_flight: int = 256  # deliveries in flight per webhooks process
    # Finished deliveries (and their attempts) and events older than this are deleted; a dead
    # delivery can be replayed until then. Keep it above the events topic's Kafka retention.
    webhooks_retention_s: int = 30 * 86400
    webhooks_prune_interval_s: float = 600.0

    # The journal's anchors (docs/security.md, "Journal anchors, round 2"; ledger.anchors): the
    # ledger alone holds the Ed25519 signing key (``kid:base64seed``; the database never holds
    # it); the public keys verify (``kid:base64,...``: several while the key rotates;
    # verify_journal and the offline verifier need only these); chain heads that moved are
    # anchored this often.
    journal_anchor_key: SecretStr = SecretStr("")
    journal_anchor_verify_keys: str = ""
    journal_anchor_interval_s: float = 5.0

    # Authority between services (docs/security.md, "Round 5: no single point of trust";
    # common.authority): compliance's, admin's and the ledger's Ed25519 signing keys
    # (``kid:base64seed``, each held by its service alone, none derived from another), the
    # public keys the ledger, compliance and webhooks verify with (``kid:base64,...``: several
    # while keys rotate), and how long a signed command stays valid (it is applied once: the
    # ledger's inbox; the ledger's records: common.authority.RECORD_TTL_S).
    compliance_signing_key: SecretStr = SecretStr("")
    admin_signing_key: SecretStr = SecretStr("")
    ledger_signing_key: SecretStr = SecretStr("")
    authority_verify_keys: str = ""
    authority_ttl_s: int = Field(default=900, ge=10, le=86400)
    # Four eyes on operator actions that move money or grant trust (admin.operators.four_eyes): on by
    # default in production, off in development; set to override.
    admin_four_eyes: bool | None = None

    sandbox_settle_s: float = 2.0
    sandbox_default_cap: Decimal = Field(default=Decimal("1000000"))

    @property
    def retry_schedule(self) -> list[float]:
        return [float(x) for x in self.webhooks_retry_schedule.split(",") if x.strip()]

    @property
    def four_eyes(self) -> bool:
        return self.admin_four_eyes if self.admin_four_eyes is not None else self.env == "production"

    @property
    def admin_tokens(self) -> list[str]:
        return [t.strip() for t in self.admin_token.get_secret_value().split(",") if t.strip()]

    def missing_secrets(self, service: str | None = None) -> list[str]:
        """The secret settings left unset (or unusable), by their environment names: those
        ``service`` uses (:data:`SERVICE_SECRETS`), or every one."""
        missing = []
        for attr, name in SECRET_SETTINGS.items():
            if service is not None and name not in SERVICE_SECRETS[service]:
                continue
            value: SecretStr = getattr(self, attr)
            if not value.get_secret_value().strip():
                missing.append(name)
        return missing

    def weak_secrets(self) -> list[str]:
        """The secret settings too weak to use, by name, never by value. In production every
        secret passes one rule (common.secret_strength); in development JWT and onboarding
        secrets need 32 characters."""
        weak = []
        if self.env == "production":
            weak.extend(weak_admin_tokens(self.admin_tokens))
        for attr in ("jwt_secret", "onboarding_secret"):
            value = getattr(self, attr).get_secret_value()
            if not value:
                continue
            short = len(value) < MIN_SECRET_CHARS
            reason = (
                weakness(value)
                if self.env == "production"
                else (f"shorter than {MIN_SECRET_CHARS} characters" if short else None)
            )
            if reason is not None:
                weak.append(f"{SECRET_SETTINGS[attr]} ({reason}; {ADVICE})")
        if self.encryption_keys.get_secret_value():
            try:
                KeyRing.parse(self.encryption_keys.get_secret_value())
            except KeyRingError as exc:
                weak.append(f"SLUICE_ENCRYPTION_KEYS ({exc})")
        signers: tuple[tuple[str, Signer], ...] = (
            ("compliance_signing_key", "compliance"),
            ("admin_signing_key", "admin"),
            ("ledger_signing_key", "ledger"),
        )
        for attr, signer in signers:
            if getattr(self, attr).get_secret_value():
                try:
                    self.signing_key(signer)
                except AuthorityError as exc:
                    weak.append(f"{SECRET_SETTINGS[attr]} ({exc})")
        if self.authority_verify_keys.strip():
            try:
                VerifyKeys.parse(self.authority_verify_keys)
            except AuthorityError as exc:
                weak.append(f"SLUICE_AUTHORITY_VERIFY_KEYS ({exc})")
        weak.extend(weak_cache_keys(self.gateway_cache_key.get_secret_value(), self.env == "production"))
        return weak + self._weak_anchor_keys()

    def _weak_anchor_keys(self) -> list[str]:
        """The journal's anchor keys (Ed25519): one ``kid:base64seed`` signing key; public
        verify keys, which must hold the signing key's own when both are given."""
        weak: list[str] = []
        verify: dict[str, bytes] = {}
        try:
            verify = dict(key_entries(self.journal_anchor_verify_keys, "SLUICE_JOURNAL_ANCHOR_VERIFY_KEYS"))
        except AuthorityError as exc:
            weak.append(f"SLUICE_JOURNAL_ANCHOR_VERIFY_KEYS ({exc})")
        signing = self.journal_anchor_key.get_secret_value()
        if not signing:
            return weak
        try:
            entries = key_entries(signing, "SLUICE_JOURNAL_ANCHOR_KEY")
            if len(entries) != 1:
                raise AuthorityError("must be exactly one kid:base64 entry (an Ed25519 seed)")
        except AuthorityError as exc:
            return [*weak, f"SLUICE_JOURNAL_ANCHOR_KEY ({exc})"]
        kid, seed = entries[0]
        public = public_entry(kid, Ed25519PrivateKey.from_private_bytes(seed)).partition(":")[2]
        if verify and base64.b64decode(public) != verify.get(kid):
            weak.append(
                f"SLUICE_JOURNAL_ANCHOR_VERIFY_KEYS (no public key of {kid!r}, the key that signs:"
                " every anchor would be untrusted)"
            )
        return weak

    def signing_key(self, signer: Signer) -> SigningKey:
        """Compliance's, admin's or the ledger's signing key (the one its own service holds).
        The ledger's signs records read for days, not commands applied within minutes."""
        if signer == "ledger":  # its own lifetime, common.authority.RECORD_TTL_S
            return SigningKey.parse(self.ledger_signing_key.get_secret_value(), signer)
        setting = self.compliance_signing_key if signer == "compliance" else self.admin_signing_key
        return SigningKey.parse(setting.get_secret_value(), signer, self.authority_ttl_s)

    @cached_property
    def verify_keys(self) -> VerifyKeys:
        return VerifyKeys.parse(self.authority_verify_keys)

    @cached_property
    def trusted_networks(self) -> tuple[Network, ...]:
        return parse_networks(self.trusted_proxies)

    @property
    def jwt_key(self) -> bytes:
        return self.jwt_secret.get_secret_value().encode()

    @property
    def onboarding_key(self) -> bytes:
        return self.onboarding_secret.get_secret_value().encode()

    @cached_property
    def cache_mac(self) -> CacheMac:
        return CacheMac.parse(self.gateway_cache_key.get_secret_value())

    @cached_property
    def key_ring(self) -> KeyRing:
        return KeyRing.parse(self.encryption_keys.get_secret_value())


def _development_fill(settings: Settings, missing: list[str]) -> None:
    """Development only: a random value for each missing secret, for this process alone (so
    a JWT signed by another process, or a secret sealed before a restart, will not verify).
    ``make run`` and the tests generate shared ones instead; see tools/stack."""
    fill = {
        "SLUICE_ADMIN_TOKEN": ("admin_token", secrets.token_urlsafe(32)),
        "SLUICE_JWT_SECRET": ("jwt_secret", secrets.token_urlsafe(32)),
        "SLUICE_ONBOARDING_SECRET": ("onboarding_secret", secrets.token_urlsafe(32)),
        "SLUICE_ENCRYPTION_KEYS": ("encryption_keys", new_key_setting()),
        "SLUICE_COMPLIANCE_SIGNING_KEY": ("compliance_signing_key", new_signing_setting("compliance", "dev")),
        "SLUICE_ADMIN_SIGNING_KEY": ("admin_signing_key", new_signing_setting("admin", "dev")),
        "SLUICE_LEDGER_SIGNING_KEY": ("ledger_signing_key", new_signing_setting("ledger", "dev")),
        "SLUICE_GATEWAY_CACHE_KEY": ("gateway_cache_key", new_key_setting()),
    }
    for name in missing:
        attr, value = fill[name]
        setattr(settings, attr, SecretStr(value))
    logging.getLogger(__name__).warning(
        "sluice: development mode, random per-process values for %s", ", ".join(missing)
    )


def _drop_foreign_secrets(settings: Settings, service: str) -> None:
    """Blank the secrets ``service`` does not use, so the process never holds them."""
    given = []
    for attr, name in SECRET_SETTINGS.items():
        if name not in SERVICE_SECRETS[service] and getattr(settings, attr).get_secret_value():
            given.append(name)
            setattr(settings, attr, SecretStr(""))
    if given:
        logging.getLogger(__name__).warning(
            "sluice: %s does not use %s: given, ignored (give each service only its own secrets)",
            service,
            ", ".join(given),
        )


def secrets_dir(environ: Mapping[str, str]) -> Path | None:
    """``SLUICE_SECRETS_DIR``: a directory of mounted secret files (deploy/k8s mounts the Secret
    ``sluice-secrets`` there), each named after its setting (``SLUICE_JWT_SECRET``, ...) and
    holding its value (a trailing newline is dropped). An environment variable of the same name
    wins over a file, so development and the tests keep using the environment. Unset: no files.
    """
    value = environ.get("SLUICE_SECRETS_DIR", "").strip()
    return Path(value) if value else None


def load_settings(service: str | None = None) -> Settings:
    """The process settings. Without its secrets a production service exits here (status 2)
    with one message naming every missing setting; a development one gets random ones.
    ``service``: only that service's secrets (:data:`SERVICE_SECRETS`) are required and kept;
    any other given to it is blanked, and named (never shown) in a warning."""
    directory = secrets_dir(os.environ)
    if directory is not None and not directory.is_dir():
        _refuse(f"sluice: SLUICE_SECRETS_DIR={directory} is not a directory")
    # BaseSettings' own argument, which pydantic's mypy plugin leaves out of __init__.
    settings = Settings(_secrets_dir=directory)  # type: ignore[call-arg]  # upstream: pydantic mypy plugin
    if service is not None:
        _drop_foreign_secrets(settings, service)
    missing = settings.missing_secrets(service)
    if missing and settings.env == "production":
        _refuse(
            "sluice: refusing to start in production (SLUICE_ENV=production): set "
            + ", ".join(missing)
            + " (environment variables, or files of those names in SLUICE_SECRETS_DIR)."
            + " No secret is derived from another or from a built-in value."
        )
    if missing:
        _development_fill(settings, missing)
    try:
        settings.trusted_networks  # noqa: B018 - parse now: a bad CIDR stops the start
    except ValueError as exc:
        _refuse(f"sluice: {exc}")
    weak = settings.weak_secrets()
    if weak:
        _refuse("sluice: unusable secret settings: " + "; ".join(weak))
    broken = kafka_problems(settings)
    if broken:
        _refuse("sluice: Kafka client settings: " + "; ".join(broken))
    unsafe = unsafe_test_settings(settings, os.environ)
    if unsafe and settings.env == "production":
        _refuse(
            "sluice: refusing to start in production (SLUICE_ENV=production) with test-only "
            "settings: unset " + ", ".join(unsafe)
        )
    needed = AUTHORITY_VERIFIERS.get(service or "", frozenset())
    if not settings.verify_keys.signers() >= needed:
        whose = " and ".join(f"{s}'s" for s in sorted(needed))
        _refuse(
            f"sluice: {service} verifies {whose} signatures (docs/security.md): set"
            " SLUICE_AUTHORITY_VERIFY_KEYS to their public keys (kid:base64,...; make run generates them)"
        )
    return settings


def unsafe_test_settings(settings: Settings, environ: Mapping[str, str]) -> list[str]:
    """The test scaffolding a production process must not run with: failpoints (injected
    faults, read from the environment by :mod:`common.failpoints`) and webhook deliveries to
    private addresses (an SSRF guard switched off)."""
    found = []
    if environ.get("SLUICE_FAILPOINTS", "").strip():
        found.append("SLUICE_FAILPOINTS")
    if settings.webhooks_allow_private_targets:
        found.append("SLUICE_WEBHOOKS_ALLOW_PRIVATE_TARGETS")
    return found


def _refuse(message: str) -> NoReturn:
    """Stop the start: one log line (JSON once logging is set up) and exit status 2."""
    logging.getLogger(__name__).critical(message)
    raise SystemExit(2)

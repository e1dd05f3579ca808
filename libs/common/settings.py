"""Settings shared by every service (environment, prefix ``SLUICE_``).

Read once in each service's lifespan via :func:`load_settings`; never at import.
"""

from __future__ import annotations

from decimal import Decimal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="SLUICE_", extra="ignore")

    environment: str = "development"
    instance_id: str = ""

    database_url: str = "postgresql+asyncpg://postgres@127.0.0.1:5432/sluice"
    redis_url: str = "redis://127.0.0.1:6379/0"
    kafka_bootstrap: str = "127.0.0.1:9092"
    topic_prefix: str = "sluice"
    db_pool_size: int = 10

    # Kafka consumer tuning. Tansu answers a waiting fetch late (up to fetch_max_wait_ms), and
    # each empty fetch costs both sides CPU: 10 ms measured as the best trade on 2 cores.
    kafka_fetch_max_wait_ms: int = 10
    # Consumers off the request path (events feeding webhooks and cap usage) poll less often:
    # every idle poll costs the broker and the consumer CPU, which the hot path needs.
    kafka_background_fetch_max_wait_ms: int = 100
    kafka_session_timeout_ms: int = 10000
    kafka_heartbeat_interval_ms: int = 1000
    kafka_max_records: int = 200
    kafka_batch_timeout_ms: int = 5
    kafka_topic_partitions: int = 6
    consumer_max_attempts: int = 3

    gateway_host: str = "127.0.0.1"
    gateway_port: int = 8000
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
    idempotency_ttl_s: int = 86400
    default_rate_limit_per_minute: int = 600
    onboarding_rate_limit_per_minute: int = 60  # per client IP on the public signup pages
    max_body_bytes: int = 65536

    jwt_secret: SecretStr = SecretStr("")
    jwt_issuer: str = "sluice"
    onboarding_secret: SecretStr = SecretStr("")
    webhook_secret_key: SecretStr = SecretStr("")

    webhooks_allow_private_targets: bool = False
    webhooks_retry_schedule: str = "5,300,1800,7200,18000,36000,36000"
    webhooks_timeout_s: float = 15.0
    webhooks_jitter: float = 0.1
    webhooks_disable_after_s: int = 5 * 86400
    webhooks_poll_s: float = 0.5
    # Finished deliveries (and their attempts) and events older than this are deleted; a dead
    # delivery can be replayed until then. Keep it above the events topic's Kafka retention.
    webhooks_retention_s: int = 30 * 86400
    webhooks_prune_interval_s: float = 600.0

    sandbox_settle_s: float = 2.0
    sandbox_default_cap: Decimal = Field(default=Decimal("1000000"))

    @property
    def retry_schedule(self) -> list[float]:
        return [float(x) for x in self.webhooks_retry_schedule.split(",") if x.strip()]

    @property
    def admin_tokens(self) -> list[str]:
        return [t.strip() for t in self.admin_token.get_secret_value().split(",") if t.strip()]

    def derived_secret(self, purpose: str) -> bytes:
        """A per-purpose key: the explicit setting, else derived from the admin token."""
        import hashlib

        explicit = {
            "jwt": self.jwt_secret,
            "onboarding": self.onboarding_secret,
            "webhook": self.webhook_secret_key,
        }.get(purpose)
        if explicit is not None and explicit.get_secret_value():
            return explicit.get_secret_value().encode()
        base = self.admin_token.get_secret_value() or "sluice-development-only"
        return hashlib.sha256(f"sluice:{purpose}:{base}".encode()).digest()


def load_settings() -> Settings:
    return Settings()

"""webhooks: endpoints, events, deliveries, attempts"""

from common.db import sql_migration

revision = "0002"
down_revision = "0001"

upgrade, downgrade = sql_migration(
    up=[
        """CREATE TABLE webhooks.endpoints (
            id TEXT PRIMARY KEY,
            tenant_id TEXT NOT NULL,
            mode TEXT NOT NULL,
            url TEXT NOT NULL,
            secret_enc BYTEA NOT NULL,
            previous_secret_enc BYTEA,
            previous_expires_at TIMESTAMPTZ,
            enabled BOOLEAN NOT NULL DEFAULT true,
            disabled_reason TEXT,
            disabled_at TIMESTAMPTZ,
            failing_since TIMESTAMPTZ,
            last_success_at TIMESTAMPTZ,
            verified_at TIMESTAMPTZ,
            created_at TIMESTAMPTZ NOT NULL DEFAULT now()
        )""",
        "CREATE INDEX endpoints_scope ON webhooks.endpoints (tenant_id, mode, id DESC)",
        """CREATE TABLE webhooks.events (
            event_id TEXT PRIMARY KEY,
            tenant_id TEXT NOT NULL,
            mode TEXT NOT NULL,
            type TEXT NOT NULL,
            body BYTEA NOT NULL,
            received_at TIMESTAMPTZ NOT NULL DEFAULT now()
        )""",
        """CREATE TABLE webhooks.deliveries (
            id TEXT PRIMARY KEY,
            event_id TEXT NOT NULL REFERENCES webhooks.events (event_id),
            webhook_id TEXT NOT NULL REFERENCES webhooks.endpoints (id),
            tenant_id TEXT NOT NULL,
            mode TEXT NOT NULL,
            event_type TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending', 'succeeded', 'dead')),
            attempts INTEGER NOT NULL DEFAULT 0,
            max_attempts INTEGER NOT NULL,
            next_attempt_at TIMESTAMPTZ NOT NULL DEFAULT now(),
            lease_until TIMESTAMPTZ,
            last_status_code INTEGER,
            last_error TEXT,
            created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
            updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
            UNIQUE (event_id, webhook_id)
        )""",
        "CREATE INDEX deliveries_due ON webhooks.deliveries (next_attempt_at) WHERE status = 'pending'",
        "CREATE INDEX deliveries_by_webhook ON webhooks.deliveries (webhook_id, id DESC)",
        "CREATE INDEX deliveries_by_tenant ON webhooks.deliveries (tenant_id, id DESC)",
        """CREATE TABLE webhooks.attempts (
            id BIGSERIAL PRIMARY KEY,
            delivery_id TEXT NOT NULL REFERENCES webhooks.deliveries (id),
            attempt INTEGER NOT NULL,
            worker TEXT NOT NULL,
            started_at TIMESTAMPTZ NOT NULL DEFAULT now(),
            finished_at TIMESTAMPTZ,
            status_code INTEGER,
            latency_ms INTEGER,
            error TEXT,
            UNIQUE (delivery_id, attempt)
        )""",
    ],
    down=["DROP TABLE webhooks.attempts, webhooks.deliveries, webhooks.events, webhooks.endpoints"],
)

"""gateway: onboarding authorizations (signed, short-lived, single-use signup links)"""

from common.db import sql_migration

revision = "0001"
down_revision = None

upgrade, downgrade = sql_migration(
    up=[
        """CREATE TABLE gateway.onboarding_authorizations (
            id TEXT PRIMARY KEY,
            tenant_id TEXT NOT NULL,
            mode TEXT NOT NULL,
            idempotency_key TEXT,
            request_id TEXT NOT NULL,
            service_user_id TEXT NOT NULL,
            email TEXT,
            account_type TEXT,
            redirect_url TEXT,
            expires_at TIMESTAMPTZ NOT NULL,
            created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
            -- a signup in flight: the exact command sent, so a retry resends the same one
            pending_command BYTEA,
            pending_at TIMESTAMPTZ,
            -- consumption: set once, by the first completed signup
            used_at TIMESTAMPTZ,
            customer_id TEXT,
            UNIQUE (tenant_id, mode, idempotency_key)
        )""",
    ],
    down=["DROP TABLE gateway.onboarding_authorizations"],
)

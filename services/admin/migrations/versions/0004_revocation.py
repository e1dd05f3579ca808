"""identity: access tokens by jti (revocable) and a tenant kill switch (disabled_at)"""

from common.db import sql_migration

revision = "0004"
down_revision = "0003"

upgrade, downgrade = sql_migration(
    up=[
        "ALTER TABLE identity.tenants ADD COLUMN disabled_at TIMESTAMPTZ, ADD COLUMN disabled_by TEXT",
        """CREATE TABLE identity.access_tokens (
            jti TEXT PRIMARY KEY,
            tenant_id UUID NOT NULL REFERENCES identity.tenants(id),
            mode TEXT NOT NULL,
            expires_at TIMESTAMPTZ NOT NULL,
            created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
            revoked_at TIMESTAMPTZ,
            revoked_by TEXT
        )""",
        "CREATE INDEX access_tokens_tenant ON identity.access_tokens (tenant_id, expires_at)",
    ],
    down=[
        "DROP TABLE identity.access_tokens",
        "ALTER TABLE identity.tenants DROP COLUMN disabled_at, DROP COLUMN disabled_by",
    ],
)

"""identity: tenants, api keys, audit log (owned by admin; read by the gateway)"""

from common.db import sql_migration

revision = "0001"
down_revision = None

upgrade, downgrade = sql_migration(
    up=[
        """CREATE TABLE identity.tenants (
            id UUID PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            default_mode TEXT NOT NULL,
            rate_limit_per_minute INTEGER NOT NULL,
            metadata JSONB NOT NULL DEFAULT '{}'::jsonb,
            live_enabled BOOLEAN NOT NULL DEFAULT false,
            created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
            updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
        )""",
        """CREATE TABLE identity.api_keys (
            id TEXT PRIMARY KEY,
            tenant_id UUID NOT NULL REFERENCES identity.tenants(id),
            key_hash TEXT NOT NULL UNIQUE,
            key_prefix TEXT NOT NULL,
            label TEXT NOT NULL,
            scopes TEXT[] NOT NULL,
            mode TEXT NOT NULL,
            revoked_at TIMESTAMPTZ,
            created_at TIMESTAMPTZ NOT NULL DEFAULT now()
        )""",
        """CREATE TABLE identity.audit_log (
            id BIGSERIAL PRIMARY KEY,
            at TIMESTAMPTZ NOT NULL DEFAULT now(),
            actor TEXT NOT NULL,
            action TEXT NOT NULL,
            request_id TEXT NOT NULL,
            outcome TEXT NOT NULL,
            target TEXT,
            details JSONB NOT NULL DEFAULT '{}'::jsonb
        )""",
        # Append-only: the database itself refuses updates and deletes of audit rows.
        """CREATE FUNCTION identity.audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'audit_log is append-only'; END $$""",
        (
            "CREATE TRIGGER audit_append_only BEFORE UPDATE OR DELETE ON identity.audit_log"
            " FOR EACH ROW EXECUTE FUNCTION identity.audit_append_only()"
        ),
    ],
    down=[
        "DROP TABLE identity.audit_log, identity.api_keys, identity.tenants",
        "DROP FUNCTION identity.audit_append_only",
    ],
)

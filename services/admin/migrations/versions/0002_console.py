"""identity: branding approval, an outbox for control events, list indexes"""

from common.db import outbox_ddl, sql_migration

revision = "0002"
down_revision = "0001"

upgrade, downgrade = sql_migration(
    up=[
        # Branding is shown on the signup screen only when an operator approved it.
        "ALTER TABLE identity.tenants ADD COLUMN branding_approved_by TEXT",
        "ALTER TABLE identity.tenants ADD COLUMN branding_approved_at TIMESTAMPTZ",
        "CREATE INDEX tenants_newest ON identity.tenants (created_at DESC, id DESC)",
        "CREATE INDEX api_keys_tenant ON identity.api_keys (tenant_id, created_at DESC)",
        "CREATE INDEX audit_log_actor ON identity.audit_log (actor, id DESC)",
        "CREATE INDEX audit_log_target ON identity.audit_log (target, id DESC)",
        *outbox_ddl("identity"),
    ],
    down=[
        "DROP TABLE identity.outbox",
        (
            "DROP INDEX identity.audit_log_target, identity.audit_log_actor,"
            " identity.api_keys_tenant, identity.tenants_newest"
        ),
        "ALTER TABLE identity.tenants DROP COLUMN branding_approved_at, DROP COLUMN branding_approved_by",
    ],
)

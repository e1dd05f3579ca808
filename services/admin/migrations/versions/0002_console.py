"""identity: branding approval, an outbox for control events, list indexes"""

from alembic import op

from common.db import outbox_ddl

revision = "0002"
down_revision = "0001"


def upgrade() -> None:
    # Branding is shown on the signup screen only when an operator approved it.
    op.execute("ALTER TABLE identity.tenants ADD COLUMN branding_approved_by TEXT")
    op.execute("ALTER TABLE identity.tenants ADD COLUMN branding_approved_at TIMESTAMPTZ")
    op.execute("CREATE INDEX tenants_newest ON identity.tenants (created_at DESC, id DESC)")
    op.execute("CREATE INDEX api_keys_tenant ON identity.api_keys (tenant_id, created_at DESC)")
    op.execute("CREATE INDEX audit_log_actor ON identity.audit_log (actor, id DESC)")
    op.execute("CREATE INDEX audit_log_target ON identity.audit_log (target, id DESC)")
    for ddl in outbox_ddl("identity"):
        op.execute(ddl)


def downgrade() -> None:
    op.execute("DROP TABLE identity.outbox")
    op.execute(
        "DROP INDEX identity.audit_log_target, identity.audit_log_actor,"
        " identity.api_keys_tenant, identity.tenants_newest"
    )
    op.execute(
        "ALTER TABLE identity.tenants DROP COLUMN branding_approved_at, DROP COLUMN branding_approved_by"
    )

"""ledger: customers, inbox, outbox"""

from alembic import op

from common.db import inbox_ddl, outbox_ddl

revision = "0001"
down_revision = None


def upgrade() -> None:
    op.execute(
        """CREATE TABLE ledger.customers (
            id TEXT PRIMARY KEY,
            tenant_id TEXT NOT NULL,
            mode TEXT NOT NULL,
            account_type TEXT NOT NULL,
            email TEXT NOT NULL,
            country_code CHAR(2) NOT NULL,
            service_user_id TEXT NOT NULL,
            full_name TEXT,
            company_name TEXT,
            registration_number TEXT,
            phone_e164 TEXT,
            created_at TIMESTAMPTZ NOT NULL DEFAULT now()
        )"""
    )
    op.execute("CREATE INDEX customers_scope ON ledger.customers (tenant_id, mode, id DESC)")
    for ddl in outbox_ddl("ledger") + inbox_ddl("ledger"):
        op.execute(ddl)


def downgrade() -> None:
    op.execute("DROP TABLE ledger.customers, ledger.outbox, ledger.inbox")

"""ledger: customers, inbox, outbox"""

from common.db import inbox_ddl, outbox_ddl, sql_migration

revision = "0001"
down_revision = None

upgrade, downgrade = sql_migration(
    up=[
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
        )""",
        "CREATE INDEX customers_scope ON ledger.customers (tenant_id, mode, id DESC)",
        *outbox_ddl("ledger"),
        *inbox_ddl("ledger"),
    ],
    down=["DROP TABLE ledger.customers, ledger.outbox, ledger.inbox"],
)

"""compliance: policy data (routes, caps, external accounts) and daily cap usage"""

from common.db import sql_migration

revision = "0002"
down_revision = "0001"

upgrade, downgrade = sql_migration(
    up=[
        """CREATE TABLE compliance.routes (
            tenant_id TEXT NOT NULL,
            mode TEXT NOT NULL,
            rail TEXT NOT NULL,
            currency TEXT NOT NULL,
            approved BOOLEAN NOT NULL,
            updated_by TEXT,
            updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
            PRIMARY KEY (tenant_id, mode, rail, currency)
        )""",
        """CREATE TABLE compliance.caps (
            tenant_id TEXT NOT NULL,
            mode TEXT NOT NULL,
            per_transfer NUMERIC(30, 6) NOT NULL CHECK (per_transfer > 0),
            daily NUMERIC(30, 6) NOT NULL CHECK (daily > 0),
            review_threshold NUMERIC(30, 6) CHECK (review_threshold >= 0),
            updated_by TEXT,
            updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
            PRIMARY KEY (tenant_id, mode)
        )""",
        """CREATE TABLE compliance.external_accounts (
            id TEXT PRIMARY KEY,
            tenant_id TEXT NOT NULL,
            mode TEXT NOT NULL,
            customer_id TEXT NOT NULL,
            rail TEXT NOT NULL,
            currency TEXT NOT NULL,
            approved BOOLEAN NOT NULL,
            account_number TEXT,
            routing_number TEXT,
            iban TEXT,
            bic TEXT,
            updated_by TEXT,
            created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
            updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
        )""",
        "CREATE INDEX external_accounts_owner ON compliance.external_accounts (tenant_id, mode, customer_id)",
        # Daily usage per (tenant, mode, currency, UTC day), bumped by one conditional upsert.
        """CREATE TABLE compliance.cap_usage (
            tenant_id TEXT NOT NULL,
            mode TEXT NOT NULL,
            currency TEXT NOT NULL,
            day DATE NOT NULL,
            used NUMERIC(30, 6) NOT NULL CHECK (used >= 0),
            PRIMARY KEY (tenant_id, mode, currency, day)
        )""",
        # What each approved transfer took from the day's cap, so a failure can give it back once.
        """CREATE TABLE compliance.cap_holds (
            transfer_id TEXT PRIMARY KEY,
            tenant_id TEXT NOT NULL,
            mode TEXT NOT NULL,
            currency TEXT NOT NULL,
            day DATE NOT NULL,
            amount NUMERIC(30, 6) NOT NULL,
            released_at TIMESTAMPTZ
        )""",
        "CREATE INDEX decisions_newest ON compliance.decisions (created_at DESC, id DESC)",
        "CREATE INDEX decisions_tenant_newest ON compliance.decisions (tenant_id, created_at DESC, id DESC)",
    ],
    down=[
        "DROP INDEX compliance.decisions_tenant_newest",
        "DROP INDEX compliance.decisions_newest",
        (
            "DROP TABLE compliance.cap_holds, compliance.cap_usage, compliance.external_accounts,"
            " compliance.caps, compliance.routes"
        ),
    ],
)

"""compliance: decisions (also the inbox) and the party registry"""

from common.db import sql_migration

revision = "0001"
down_revision = None

upgrade, downgrade = sql_migration(
    up=[
        """CREATE TABLE compliance.decisions (
            id TEXT PRIMARY KEY,
            command_id TEXT NOT NULL UNIQUE,
            request_id TEXT NOT NULL,
            tenant_id TEXT NOT NULL,
            mode TEXT NOT NULL,
            command_type TEXT NOT NULL,
            outcome TEXT NOT NULL,
            rule TEXT NOT NULL,
            reason TEXT,
            inputs JSONB NOT NULL,
            out_topic TEXT NOT NULL,
            out_key BYTEA,
            out_partition INTEGER,
            out_payload BYTEA NOT NULL,
            created_at TIMESTAMPTZ NOT NULL DEFAULT now()
        )""",
        "CREATE INDEX decisions_tenant ON compliance.decisions (tenant_id, id DESC)",
        """CREATE TABLE compliance.parties (
            tenant_id TEXT NOT NULL,
            mode TEXT NOT NULL,
            party_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            customer_id TEXT,
            country_code CHAR(2),
            PRIMARY KEY (tenant_id, mode, party_id)
        )""",
    ],
    down=["DROP TABLE compliance.decisions, compliance.parties"],
)

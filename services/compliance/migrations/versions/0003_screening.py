"""compliance: screened on-chain addresses"""

from common.db import sql_migration

revision = "0003"
down_revision = "0002"

upgrade, downgrade = sql_migration(
    up=[
        """CREATE TABLE compliance.screened_addresses (
            chain TEXT NOT NULL,
            address TEXT NOT NULL,
            reason TEXT NOT NULL,
            added_by TEXT,
            created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
            PRIMARY KEY (chain, address)
        )""",
        "CREATE INDEX screened_by_address ON compliance.screened_addresses (address)",
    ],
    down=["DROP TABLE compliance.screened_addresses"],
)

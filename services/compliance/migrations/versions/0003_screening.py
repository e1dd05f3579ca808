"""compliance: screened on-chain addresses (contract 12.4)"""

from alembic import op

revision = "0003"
down_revision = "0002"


def upgrade() -> None:
    op.execute(
        """CREATE TABLE compliance.screened_addresses (
            chain TEXT NOT NULL,
            address TEXT NOT NULL,
            reason TEXT NOT NULL,
            added_by TEXT,
            created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
            PRIMARY KEY (chain, address)
        )"""
    )
    op.execute("CREATE INDEX screened_by_address ON compliance.screened_addresses (address)")


def downgrade() -> None:
    op.execute("DROP TABLE compliance.screened_addresses")

"""webhooks: indexes for the retention sweep

Revision ID: 0003
Revises: 0002
"""

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("CREATE INDEX events_received ON webhooks.events (received_at)")
    op.execute(
        "CREATE INDEX deliveries_finished ON webhooks.deliveries (updated_at) WHERE status <> 'pending'"
    )


def downgrade() -> None:
    op.execute("DROP INDEX webhooks.events_received, webhooks.deliveries_finished")

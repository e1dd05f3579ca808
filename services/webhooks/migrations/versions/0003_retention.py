"""webhooks: indexes for the retention sweep"""

from alembic import op

revision = "0003"
down_revision = "0002"


def upgrade() -> None:
    op.execute("CREATE INDEX events_received ON webhooks.events (received_at)")
    op.execute(
        "CREATE INDEX deliveries_finished ON webhooks.deliveries (updated_at) WHERE status <> 'pending'"
    )


def downgrade() -> None:
    op.execute("DROP INDEX webhooks.events_received, webhooks.deliveries_finished")

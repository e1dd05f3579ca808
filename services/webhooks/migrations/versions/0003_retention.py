"""webhooks: indexes for the retention sweep"""

from common.db import sql_migration

revision = "0003"
down_revision = "0002"

upgrade, downgrade = sql_migration(
    up=[
        "CREATE INDEX events_received ON webhooks.events (received_at)",
        "CREATE INDEX deliveries_finished ON webhooks.deliveries (updated_at) WHERE status <> 'pending'",
    ],
    down=["DROP INDEX webhooks.events_received, webhooks.deliveries_finished"],
)

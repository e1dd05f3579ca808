"""webhooks: a partner deletes an endpoint (``deleted_at``)

A deleted endpoint's row stays, disabled, so that its deliveries and attempts keep their
history for operators; ``deleted_at`` hides it from the partner (not found, not listed, not
counted against the endpoint limit). The previous release reads such a row as disabled.
"""

from common.db import sql_migration

revision = "0008"
down_revision = "0007"

upgrade, downgrade = sql_migration(
    up=["ALTER TABLE webhooks.endpoints ADD COLUMN deleted_at TIMESTAMPTZ"],
    down=["ALTER TABLE webhooks.endpoints DROP COLUMN deleted_at"],
)

"""identity: a dead letter admin refused to redrive keeps why (its origin did not verify, or
it is never to be redriven)"""

from common.db import sql_migration

revision = "0005"
down_revision = "0004"

upgrade, downgrade = sql_migration(
    up=["ALTER TABLE identity.dead_letters ADD COLUMN redrive_refused TEXT"],
    down=["ALTER TABLE identity.dead_letters DROP COLUMN redrive_refused"],
)

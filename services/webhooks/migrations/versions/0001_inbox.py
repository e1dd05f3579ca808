"""webhooks: inbox"""

from common.db import inbox_ddl, sql_migration

revision = "0001"
down_revision = None

upgrade, downgrade = sql_migration(
    up=inbox_ddl("webhooks"),
    down=["DROP TABLE webhooks.inbox"],
)

"""webhooks: no index no query reads

``events_scope`` (tenant, mode, event id) served ``GET /v1/events`` newest first by event id;
the events API walks each tenant's events by ``sequence`` since 0009 (``events_sequence``), and
an event is read by its id through the primary key. The index was an entry written with every
event for no reader.
"""

from common.db import sql_migration

revision = "0010"
down_revision = "0009"

upgrade, downgrade = sql_migration(
    up=["DROP INDEX webhooks.events_scope"],
    down=["CREATE INDEX events_scope ON webhooks.events (tenant_id, mode, event_id DESC)"],
)

"""webhooks: every event numbered per tenant and mode (``sequence``)

``event_sequences`` holds each (tenant, mode)'s last number; the transaction that stores
events takes the next ones from it (``repository.number_events``), so numbers follow the
order events are stored in and become visible in that order (the row stays locked until
commit). ``events_sequence`` serves ``GET /v1/events`` in either order and finds a cursor's
place; it is unique, so a number is never given twice.

Events already stored are numbered here in the order they were received, and each counter
starts after them. The previous release stores events without a number: upgrade every
webhooks instance before events flow again (its events would be listed by no cursor).
"""

from common.db import sql_migration

revision = "0009"
down_revision = "0008"

upgrade, downgrade = sql_migration(
    up=[
        (
            "CREATE TABLE webhooks.event_sequences (tenant_id TEXT NOT NULL, mode TEXT NOT NULL,"
            " last_sequence BIGINT NOT NULL, PRIMARY KEY (tenant_id, mode))"
        ),
        "ALTER TABLE webhooks.events ADD COLUMN sequence BIGINT",
        (
            "UPDATE webhooks.events e SET sequence = n.sequence FROM (SELECT event_id, row_number()"
            " OVER (PARTITION BY tenant_id, mode ORDER BY received_at, event_id) AS sequence"
            " FROM webhooks.events) n WHERE n.event_id = e.event_id"
        ),
        (
            "INSERT INTO webhooks.event_sequences (tenant_id, mode, last_sequence)"
            " SELECT tenant_id, mode, max(sequence) FROM webhooks.events GROUP BY tenant_id, mode"
        ),
        "CREATE UNIQUE INDEX events_sequence ON webhooks.events (tenant_id, mode, sequence)",
    ],
    down=[
        "DROP INDEX webhooks.events_sequence",
        "ALTER TABLE webhooks.events DROP COLUMN sequence",
        "DROP TABLE webhooks.event_sequences",
    ],
)

"""webhooks: an attempt is written once, when it ends; the lease says who holds a delivery

Writing each attempt at the claim and updating it at the outcome cost the record a lookup
into ``attempts`` per outcome; with a prepared statement's generic plan made while the table was
small, that lookup was a sequential scan of the whole table on every turn. The claim now records
the lease holder on the delivery (``leased_by``, ``leased_at``); the outcome inserts the
attempt; a lease taken over after it expired inserts the lost attempt as ``interrupted`` (or
closes it so, when a worker of the previous release opened it). Deliveries leased now get their
holder from their open attempt, so a rolling upgrade loses nothing.
"""

from common.db import sql_migration

revision = "0006"
down_revision = "0005"

upgrade, downgrade = sql_migration(
    up=[
        "ALTER TABLE webhooks.deliveries ADD COLUMN leased_by TEXT, ADD COLUMN leased_at TIMESTAMPTZ",
        (
            "UPDATE webhooks.deliveries d SET leased_by = a.worker, leased_at = a.started_at"
            " FROM webhooks.attempts a"
            " WHERE a.delivery_id = d.id AND a.attempt = d.attempts AND d.lease_until IS NOT NULL"
        ),
    ],
    down=["ALTER TABLE webhooks.deliveries DROP COLUMN leased_by, DROP COLUMN leased_at"],
)

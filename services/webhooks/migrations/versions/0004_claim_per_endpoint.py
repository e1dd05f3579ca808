"""webhooks: claims per due endpoint

The claim no longer ranks the whole backlog: it takes a few enabled endpoints whose
``next_due_at`` has come (index ``endpoints_due``), and for each walks its own due rows
(``deliveries_endpoint_due``) after counting its leased rows (``deliveries_leased``, at most
the in-flight limit of entries). ``deliveries_due`` served the old global scan only.
"""

from common.db import sql_migration

revision = "0004"
down_revision = "0003"

upgrade, downgrade = sql_migration(
    up=[
        "ALTER TABLE webhooks.endpoints ADD COLUMN next_due_at TIMESTAMPTZ",
        "CREATE INDEX endpoints_due ON webhooks.endpoints (next_due_at) WHERE enabled",
        (
            "CREATE INDEX deliveries_endpoint_due ON webhooks.deliveries (webhook_id, next_attempt_at)"
            " WHERE status = 'pending'"
        ),
        (
            "CREATE INDEX deliveries_leased ON webhooks.deliveries (webhook_id)"
            " WHERE status = 'pending' AND lease_until IS NOT NULL"
        ),
        "DROP INDEX webhooks.deliveries_due",
        # Whatever is pending now is looked at by the first claim.
        (
            "UPDATE webhooks.endpoints e SET next_due_at = now() WHERE EXISTS"
            " (SELECT 1 FROM webhooks.deliveries d WHERE d.webhook_id = e.id AND d.status = 'pending')"
        ),
    ],
    down=[
        "CREATE INDEX deliveries_due ON webhooks.deliveries (next_attempt_at) WHERE status = 'pending'",
        "DROP INDEX webhooks.deliveries_leased, webhooks.deliveries_endpoint_due, webhooks.endpoints_due",
        "ALTER TABLE webhooks.endpoints DROP COLUMN next_due_at",
    ],
)

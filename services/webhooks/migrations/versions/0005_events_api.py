"""webhooks: the events API, per-endpoint event types, every secret rotated within 24 h

``events_scope`` serves ``GET /v1/events`` (one tenant and mode, newest first).
``enabled_events`` (NULL: every type) filters the fan-out. The single previous secret
becomes parallel arrays of retired secrets and their expiry, so several rotations in a day
all still verify; a previous secret still valid is carried over.
"""

from common.db import sql_migration

revision = "0005"
down_revision = "0004"

upgrade, downgrade = sql_migration(
    up=[
        "CREATE INDEX events_scope ON webhooks.events (tenant_id, mode, event_id DESC)",
        "ALTER TABLE webhooks.endpoints ADD COLUMN enabled_events TEXT[]",
        (
            "ALTER TABLE webhooks.endpoints"
            " ADD COLUMN retired_secrets_enc BYTEA[] NOT NULL DEFAULT '{}',"
            " ADD COLUMN retired_until TIMESTAMPTZ[] NOT NULL DEFAULT '{}'"
        ),
        (
            "UPDATE webhooks.endpoints SET retired_secrets_enc = ARRAY[previous_secret_enc],"
            " retired_until = ARRAY[previous_expires_at]"
            " WHERE previous_secret_enc IS NOT NULL AND previous_expires_at > now()"
        ),
        "ALTER TABLE webhooks.endpoints DROP COLUMN previous_secret_enc, DROP COLUMN previous_expires_at",
    ],
    down=[
        (
            "ALTER TABLE webhooks.endpoints ADD COLUMN previous_secret_enc BYTEA,"
            " ADD COLUMN previous_expires_at TIMESTAMPTZ"
        ),
        (
            "UPDATE webhooks.endpoints SET previous_secret_enc = retired_secrets_enc[1],"
            " previous_expires_at = retired_until[1] WHERE cardinality(retired_secrets_enc) > 0"
        ),
        (
            "ALTER TABLE webhooks.endpoints DROP COLUMN retired_secrets_enc, DROP COLUMN retired_until,"
            " DROP COLUMN enabled_events"
        ),
        "DROP INDEX webhooks.events_scope",
    ],
)

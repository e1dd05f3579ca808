"""ledger: an answer kept once

The reply to a command is the command's result, which the inbox keeps: its outbox row names
the command (``payload_of``) instead of carrying the same bytes again (about 0.9 kB a
transfer, once in the inbox and once in the outbox). The relay reads the payload from the
inbox for such a row; a row carries one or the other (``outbox_payload_or_inbox``).
"""

from common.db import sql_migration

revision = "0005"
down_revision = "0004"

upgrade, downgrade = sql_migration(
    up=[
        "ALTER TABLE ledger.outbox ADD COLUMN payload_of TEXT, ALTER COLUMN payload DROP NOT NULL",
        "ALTER TABLE ledger.outbox ADD CONSTRAINT outbox_payload_or_inbox"
        " CHECK (payload IS NOT NULL OR payload_of IS NOT NULL)",
    ],
    down=[
        "UPDATE ledger.outbox o SET payload = i.result FROM ledger.inbox i"
        " WHERE o.payload IS NULL AND i.command_id = o.payload_of",
        "ALTER TABLE ledger.outbox DROP CONSTRAINT outbox_payload_or_inbox",
        "ALTER TABLE ledger.outbox DROP COLUMN payload_of, ALTER COLUMN payload SET NOT NULL",
    ],
)

"""compliance: the signed command kept once

A decision approving a command to the ledger no longer stores the signed command it
published (about 1 kB a decision, written twice per transfer with the outbox row): a command
that comes again is signed again from itself and the decision (``id``, ``outcome``,
``rule``), as a stored one already was to refresh its grant. Refusals and answers keep their
bytes. Rows from before keep theirs and are answered from them.
"""

from common.db import sql_migration

revision = "0006"
down_revision = "0005"

upgrade, downgrade = sql_migration(
    up=["ALTER TABLE compliance.decisions ALTER COLUMN out_payload DROP NOT NULL"],
    down=[
        "DELETE FROM compliance.decisions WHERE out_payload IS NULL",
        "ALTER TABLE compliance.decisions ALTER COLUMN out_payload SET NOT NULL",
    ],
)

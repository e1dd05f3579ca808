"""compliance: a transfer id names one command, and a hold names the command that took it

A decision records the transfer id of the command it decided (unique: a second command with
the same transfer id and another command id is refused ``transfer_id_reused``, and this index
refuses the write of two instances racing with such a pair). A hold records the command whose
claim it is, so that the ledger's release for a failed command gives back that command's hold
and nothing else (compliance.allowance). Rows from before have neither: a transfer id already
held (``cap_holds``) still counts as taken, and a hold without a command is given back only by
the transfer's own failed or rejected event, never by a release.
"""

from common.db import sql_migration

revision = "0005"
down_revision = "0004"

upgrade, downgrade = sql_migration(
    up=[
        "ALTER TABLE compliance.decisions ADD COLUMN transfer_id TEXT",
        "CREATE UNIQUE INDEX decisions_transfer_id ON compliance.decisions (transfer_id)"
        " WHERE transfer_id IS NOT NULL",
        "ALTER TABLE compliance.cap_holds ADD COLUMN command_id TEXT",
    ],
    down=[
        "ALTER TABLE compliance.cap_holds DROP COLUMN command_id",
        "DROP INDEX compliance.decisions_transfer_id",
        "ALTER TABLE compliance.decisions DROP COLUMN transfer_id",
    ],
)

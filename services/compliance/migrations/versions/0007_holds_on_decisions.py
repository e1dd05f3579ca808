"""compliance: a transfer's cap hold is kept on its decision, not in a row of its own

Each approved transfer wrote a decision and a ``cap_holds`` row beside it (about 340 bytes of
WAL and one row write per transfer, docs/performance/history.md). The hold's four columns now
sit on the decision, written by the same insert: the decision already names the transfer
(``decisions_transfer_id``, unique) and the command whose hold it is (``command_id``).

Expand only: ``cap_holds`` stays, with the holds taken before this release and by instances
of the previous release while the Deployments roll; releases give back from both, and the
claim reads both for a transfer id already held. ``compliance.holds`` lists every hold, from
either place (what the audits and tests sum). The downgrade drops the view and the columns:
holds kept on decisions are not copied back.
"""

from common.db import sql_migration

revision = "0007"
down_revision = "0006"

upgrade, downgrade = sql_migration(
    up=[
        "ALTER TABLE compliance.decisions ADD COLUMN hold_currency TEXT, ADD COLUMN hold_day DATE,"
        " ADD COLUMN hold_amount NUMERIC(30, 6), ADD COLUMN hold_released_at TIMESTAMP WITH TIME ZONE",
        "CREATE VIEW compliance.holds AS"
        " SELECT transfer_id, tenant_id, mode, hold_currency AS currency, hold_day AS day,"
        " hold_amount AS amount, hold_released_at AS released_at, command_id"
        " FROM compliance.decisions WHERE hold_amount IS NOT NULL"
        " UNION ALL"
        " SELECT transfer_id, tenant_id, mode, currency, day, amount, released_at, command_id"
        " FROM compliance.cap_holds",
    ],
    down=[
        "DROP VIEW compliance.holds",
        "ALTER TABLE compliance.decisions DROP COLUMN hold_released_at, DROP COLUMN hold_amount,"
        " DROP COLUMN hold_day, DROP COLUMN hold_currency",
    ],
)

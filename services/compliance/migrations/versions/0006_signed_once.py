"""compliance: the signed command kept once, and no index no query reads

A decision approving a command to the ledger no longer stores the signed command it
published (about 1 kB a decision, written twice per transfer with the outbox row): a command
that comes again is signed again from itself and the decision (``id``, ``outcome``,
``rule``), as a stored one already was to refresh its grant. Refusals and answers keep their
bytes. Rows from before keep theirs and are answered from them. The downgrade stops (NOT NULL
refused) once a decision without its bytes exists: they cannot be made again, and a decision
is never deleted to make a downgrade pass.

``decisions_tenant`` (tenant, id) goes: the operators' list reads a tenant's decisions newest
first through ``decisions_tenant_newest``, and nothing else reads by tenant and id; it was an
index entry written with every decision for no reader.
"""

from common.db import sql_migration

revision = "0006"
down_revision = "0005"

upgrade, downgrade = sql_migration(
    up=[
        "ALTER TABLE compliance.decisions ALTER COLUMN out_payload DROP NOT NULL",
        "DROP INDEX compliance.decisions_tenant",
    ],
    down=[
        "CREATE INDEX decisions_tenant ON compliance.decisions (tenant_id, id DESC)",
        "ALTER TABLE compliance.decisions ALTER COLUMN out_payload SET NOT NULL",
    ],
)

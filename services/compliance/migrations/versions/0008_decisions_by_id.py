"""compliance: decisions are listed newest first by id, through one index fewer

Decision ids are time-ordered (``common.ids.new_id``: a millisecond timestamp first), as every
listed resource's are, so the operators' list pages by id alone: ``ORDER BY id DESC`` with the
cursor ``id < starting_after``. The primary key serves the list of every tenant, and
``decisions_tenant`` (tenant, id) one tenant's; ``decisions_newest`` (created_at, id) and
``decisions_tenant_newest`` (tenant, created_at, id) go. One index entry less per decision
(about 100 bytes of WAL a transfer, docs/performance/history.md). The previous release's list,
which orders by created_at, still answers during a rolling upgrade (sorting what it reads).
"""

from common.db import sql_migration

revision = "0008"
down_revision = "0007"

upgrade, downgrade = sql_migration(
    up=[
        "CREATE INDEX decisions_tenant ON compliance.decisions (tenant_id, id DESC)",
        "DROP INDEX compliance.decisions_tenant_newest",
        "DROP INDEX compliance.decisions_newest",
    ],
    down=[
        "CREATE INDEX decisions_newest ON compliance.decisions (created_at DESC, id DESC)",
        "CREATE INDEX decisions_tenant_newest ON compliance.decisions (tenant_id, created_at DESC, id DESC)",
        "DROP INDEX compliance.decisions_tenant",
    ],
)

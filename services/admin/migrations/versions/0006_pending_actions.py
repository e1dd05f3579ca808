"""identity: operator actions waiting for a second operator's approval (four eyes)"""

from common.db import sql_migration

revision = "0006"
down_revision = "0005"

upgrade, downgrade = sql_migration(
    up=[
        """CREATE TABLE identity.pending_actions (
            id TEXT PRIMARY KEY,
            action TEXT NOT NULL,
            body BYTEA NOT NULL,
            proposed_by TEXT NOT NULL,
            proposed_at TIMESTAMPTZ NOT NULL DEFAULT now(),
            expires_at TIMESTAMPTZ NOT NULL,
            state TEXT NOT NULL,
            decided_by TEXT,
            decided_at TIMESTAMPTZ
        )""",
        "CREATE INDEX pending_actions_state ON identity.pending_actions (state, proposed_at)",
    ],
    down=["DROP TABLE identity.pending_actions"],
)

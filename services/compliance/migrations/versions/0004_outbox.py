"""compliance: what a batch publishes leaves through an outbox (issue 26)

Every consumer that emits now writes what it publishes in its batch's transaction and
publishes after commit, with the same relay for what a crash left (common.outbox).
"""

from alembic import op

from common.db import outbox_ddl

revision = "0004"
down_revision = "0003"


def upgrade() -> None:
    for ddl in outbox_ddl("compliance"):
        op.execute(ddl)


def downgrade() -> None:
    op.execute("DROP TABLE compliance.outbox")

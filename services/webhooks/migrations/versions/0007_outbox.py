"""webhooks: command results leave through an outbox (issue 26)

Every consumer that emits now writes what it publishes in its batch's transaction and
publishes after commit, with the same relay for what a crash left (common.outbox).
"""

from alembic import op

from common.db import outbox_ddl

revision = "0007"
down_revision = "0006"


def upgrade() -> None:
    for ddl in outbox_ddl("webhooks"):
        op.execute(ddl)


def downgrade() -> None:
    op.execute("DROP TABLE webhooks.outbox")

"""webhooks: inbox"""

from alembic import op

from common.db import inbox_ddl

revision = "0001"
down_revision = None


def upgrade() -> None:
    for ddl in inbox_ddl("webhooks"):
        op.execute(ddl)


def downgrade() -> None:
    op.execute("DROP TABLE webhooks.inbox")

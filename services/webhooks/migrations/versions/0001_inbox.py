"""webhooks: inbox

Revision ID: 0001
Revises:
"""

from alembic import op

from common.db import inbox_ddl

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    for ddl in inbox_ddl("webhooks"):
        op.execute(ddl)


def downgrade() -> None:
    op.execute("DROP TABLE webhooks.inbox")

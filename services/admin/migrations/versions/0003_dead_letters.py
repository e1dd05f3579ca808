"""identity: dead letters kept for operators (list and redrive)"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"


def upgrade() -> None:
    op.create_table(
        "dead_letters",
        sa.Column("seq", sa.BigInteger(), sa.Identity(), primary_key=True),
        sa.Column("dead_letter_id", sa.Text(), nullable=False, unique=True),
        sa.Column("service", sa.Text(), nullable=False),
        sa.Column("topic", sa.Text(), nullable=False),
        sa.Column("partition", sa.Integer(), nullable=False),
        sa.Column("offset", sa.BigInteger(), nullable=False),
        sa.Column("key", sa.LargeBinary(), nullable=True),
        sa.Column("error", sa.Text(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("request_id", sa.Text(), nullable=True),
        sa.Column("payload", sa.LargeBinary(), nullable=False),
        sa.Column("dead_lettered_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("redriven_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("redriven_by", sa.Text(), nullable=True),
        schema="identity",
    )
    op.create_index("dead_letters_service", "dead_letters", ["service", "seq"], schema="identity")


def downgrade() -> None:
    op.drop_table("dead_letters", schema="identity")

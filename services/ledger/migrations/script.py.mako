"""${message}"""
% if upgrades:

import sqlalchemy as sa
from alembic import op

revision = ${repr(up_revision)}
down_revision = ${repr(down_revision)}


def upgrade() -> None:
    ${upgrades}


def downgrade() -> None:
    ${downgrades}
% else:

from common.db import sql_migration

revision = ${repr(up_revision)}
down_revision = ${repr(down_revision)}

upgrade, downgrade = sql_migration(
    up=[],
    down=[],
)
% endif

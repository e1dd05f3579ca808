"""webhooks: command results leave through an outbox

Every consumer that emits now writes what it publishes in its batch's transaction and
publishes after commit, with the same relay for what a crash left (common.outbox).
"""

from common.db import outbox_migration

revision = "0007"
down_revision = "0006"

upgrade, downgrade = outbox_migration("webhooks")

"""compliance: what a batch publishes leaves through an outbox

Every consumer that emits now writes what it publishes in its batch's transaction and
publishes after commit, with the same relay for what a crash left (common.outbox).
"""

from common.db import outbox_migration

revision = "0004"
down_revision = "0003"

upgrade, downgrade = outbox_migration("compliance")

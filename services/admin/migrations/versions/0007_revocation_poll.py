"""identity: partial indexes for the gateway's revocation poll (keys and access tokens revoked,
tenants disabled, lately), so the poll reads only the recent changes"""

from common.db import sql_migration

revision = "0007"
down_revision = "0006"

upgrade, downgrade = sql_migration(
    up=[
        "CREATE INDEX api_keys_revoked ON identity.api_keys (revoked_at) WHERE revoked_at IS NOT NULL",
        "CREATE INDEX access_tokens_revoked ON identity.access_tokens (revoked_at)"
        " WHERE revoked_at IS NOT NULL",
        "CREATE INDEX tenants_disabled ON identity.tenants (disabled_at) WHERE disabled_at IS NOT NULL",
    ],
    down=[
        "DROP INDEX identity.api_keys_revoked",
        "DROP INDEX identity.access_tokens_revoked",
        "DROP INDEX identity.tenants_disabled",
    ],
)

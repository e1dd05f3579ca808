"""ledger: developer fees and external withdrawals

``transfers.fee_amount``: the developer fee charged on completion (amount - fee reaches the
destination, the fee the tenant's ``ext.<tenant>.<mode>.<currency>.fees`` account).
"""

from common.db import sql_migration

revision = "0003"
down_revision = "0002"

KINDS = "'available', 'held', 'deposits', 'payouts', 'fees', 'settlement'"
EXTERNAL = "'deposits', 'payouts', 'fees', 'settlement'"

upgrade, downgrade = sql_migration(
    up=[
        "ALTER TABLE ledger.transfers ADD COLUMN fee_amount NUMERIC(38, 6) NOT NULL DEFAULT 0",
        # Two more kinds of external account: the tenant's developer fees, and the settlement
        # account external withdrawals leave the suite through.
        "ALTER TABLE ledger.accounts DROP CONSTRAINT accounts_kind_check, DROP CONSTRAINT wallet_kinds",
        (
            "ALTER TABLE ledger.accounts"
            f" ADD CONSTRAINT accounts_kind_check CHECK (kind IN ({KINDS})),"
            f" ADD CONSTRAINT wallet_kinds CHECK ((wallet_id IS NULL) = (kind IN ({EXTERNAL})))"
        ),
        # A withdrawal's route: out of the suite (ledger.withdrawals).
        (
            "ALTER TABLE ledger.transfers DROP CONSTRAINT transfers_route_check,"
            " ADD CONSTRAINT transfers_route_check CHECK (route IN ('book', 'onchain', 'external', 'payout'))"
        ),
    ],
    down=[
        (
            "ALTER TABLE ledger.transfers DROP CONSTRAINT transfers_route_check,"
            " ADD CONSTRAINT transfers_route_check CHECK (route IN ('book', 'onchain', 'payout'))"
        ),
        "ALTER TABLE ledger.accounts DROP CONSTRAINT accounts_kind_check, DROP CONSTRAINT wallet_kinds",
        (
            "ALTER TABLE ledger.accounts ADD CONSTRAINT accounts_kind_check"
            " CHECK (kind IN ('available', 'held', 'deposits', 'payouts')),"
            " ADD CONSTRAINT wallet_kinds CHECK ((wallet_id IS NULL) = (kind IN ('deposits', 'payouts')))"
        ),
        "ALTER TABLE ledger.transfers DROP COLUMN fee_amount",
    ],
)

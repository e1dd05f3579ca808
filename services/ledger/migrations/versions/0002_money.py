"""ledger: wallets, virtual accounts, chart of accounts, journal, transfers, deposits"""

from common.db import sql_migration

revision = "0002"
down_revision = "0001"

MONEY = "NUMERIC(38, 6)"

DDL = [
    """CREATE TABLE ledger.wallets (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        mode TEXT NOT NULL,
        customer_id TEXT NOT NULL REFERENCES ledger.customers (id),
        symbol TEXT NOT NULL,
        chain TEXT NOT NULL,
        deposit_address TEXT NOT NULL UNIQUE,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now()
    )""",
    "CREATE INDEX wallets_scope ON ledger.wallets (tenant_id, mode, id DESC)",
    "CREATE INDEX wallets_customer ON ledger.wallets (customer_id, symbol, chain)",
    """CREATE TABLE ledger.virtual_accounts (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        mode TEXT NOT NULL,
        customer_id TEXT NOT NULL REFERENCES ledger.customers (id),
        currency TEXT NOT NULL,
        wallet_id TEXT NOT NULL REFERENCES ledger.wallets (id),
        destination JSONB NOT NULL,
        account_number TEXT,
        routing_number TEXT,
        iban TEXT,
        bic TEXT,
        bank_name TEXT,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now()
    )""",
    "CREATE INDEX virtual_accounts_scope ON ledger.virtual_accounts (tenant_id, mode, id DESC)",
    # Chart of accounts. Wallet accounts (kind available / held) keep their balance in step
    # with their postings and can never go below zero. External accounts (deposits, payouts)
    # are derived from postings only, so no tenant-wide hot row is ever locked.
    f"""CREATE TABLE ledger.accounts (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        mode TEXT NOT NULL,
        currency TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('available', 'held', 'deposits', 'payouts')),
        wallet_id TEXT REFERENCES ledger.wallets (id),
        balance {MONEY} NOT NULL DEFAULT 0,
        CONSTRAINT wallet_accounts_never_negative CHECK (wallet_id IS NULL OR balance >= 0),
        CONSTRAINT wallet_kinds CHECK ((wallet_id IS NULL) = (kind IN ('deposits', 'payouts')))
    )""",
    """CREATE TABLE ledger.journal_entries (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        mode TEXT NOT NULL,
        kind TEXT NOT NULL,
        transfer_id TEXT,
        deposit_id TEXT,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now()
    )""",
    "CREATE INDEX journal_entries_transfer ON ledger.journal_entries (transfer_id)",
    f"""CREATE TABLE ledger.postings (
        id BIGSERIAL PRIMARY KEY,
        entry_id TEXT NOT NULL REFERENCES ledger.journal_entries (id),
        account_id TEXT NOT NULL REFERENCES ledger.accounts (id),
        currency TEXT NOT NULL,
        amount {MONEY} NOT NULL CHECK (amount <> 0)
    )""",
    "CREATE INDEX postings_entry ON ledger.postings (entry_id)",
    "CREATE INDEX postings_account ON ledger.postings (account_id)",
    # Defence in depth: at commit, every entry touched must sum to zero per currency.
    """CREATE FUNCTION ledger.check_entry_balanced() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF EXISTS (SELECT 1 FROM ledger.postings WHERE entry_id = NEW.entry_id
                   GROUP BY currency HAVING sum(amount) <> 0) THEN
            RAISE EXCEPTION 'journal entry % does not balance', NEW.entry_id;
        END IF;
        RETURN NULL;
    END $$""",
    """CREATE CONSTRAINT TRIGGER postings_balanced AFTER INSERT ON ledger.postings
        DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ledger.check_entry_balanced()""",
    """CREATE FUNCTION ledger.refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        RAISE EXCEPTION 'journal rows are append-only';
    END $$""",
    """CREATE TRIGGER postings_append_only BEFORE UPDATE OR DELETE ON ledger.postings
        FOR EACH ROW EXECUTE FUNCTION ledger.refuse_change()""",
    f"""CREATE TABLE ledger.transfers (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        mode TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('transfer', 'payout')),
        route TEXT NOT NULL CHECK (route IN ('book', 'onchain', 'payout')),
        state TEXT NOT NULL,
        previous_state TEXT,
        amount {MONEY} NOT NULL CHECK (amount > 0),
        currency TEXT NOT NULL,
        source_wallet_id TEXT NOT NULL REFERENCES ledger.wallets (id),
        destination_wallet_id TEXT REFERENCES ledger.wallets (id),
        source JSONB NOT NULL,
        destination JSONB NOT NULL,
        developer_fee JSONB,
        idempotency_key TEXT NOT NULL,
        decision_id TEXT,
        next_step_at TIMESTAMPTZ,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        CONSTRAINT transfers_idempotency UNIQUE (tenant_id, mode, idempotency_key)
    )""",
    "CREATE INDEX transfers_scope ON ledger.transfers (tenant_id, mode, kind, id DESC)",
    "CREATE INDEX transfers_due ON ledger.transfers (next_step_at) WHERE next_step_at IS NOT NULL",
    """CREATE TABLE ledger.state_changes (
        id BIGSERIAL PRIMARY KEY,
        transfer_id TEXT NOT NULL REFERENCES ledger.transfers (id),
        from_state TEXT,
        to_state TEXT NOT NULL,
        cause TEXT NOT NULL,
        request_id TEXT,
        at TIMESTAMPTZ NOT NULL DEFAULT now()
    )""",
    "CREATE INDEX state_changes_transfer ON ledger.state_changes (transfer_id, id)",
    f"""CREATE TABLE ledger.deposits (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        mode TEXT NOT NULL,
        virtual_account_id TEXT NOT NULL REFERENCES ledger.virtual_accounts (id),
        wallet_id TEXT NOT NULL REFERENCES ledger.wallets (id),
        fiat_currency TEXT NOT NULL,
        fiat_amount {MONEY} NOT NULL CHECK (fiat_amount > 0),
        currency TEXT NOT NULL,
        amount {MONEY} NOT NULL CHECK (amount > 0),
        created_at TIMESTAMPTZ NOT NULL DEFAULT now()
    )""",
]

upgrade, downgrade = sql_migration(
    up=DDL,
    down=[
        (
            "DROP TABLE ledger.deposits, ledger.state_changes, ledger.transfers, ledger.postings,"
            " ledger.journal_entries, ledger.accounts, ledger.virtual_accounts, ledger.wallets"
        ),
        "DROP FUNCTION ledger.check_entry_balanced(), ledger.refuse_change()",
    ],
)

"""The ``ledger`` schema as SQLModel tables, matching ``migrations/versions`` column for column.

Triggers (balanced entries, append-only postings) and CHECK constraints live in the
migrations only; ``tests/inprocess/test_models_drift.py`` checks that these models and the migrations
agree. Repositories build their statements from these tables (``repository.py``).
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any, NamedTuple

from sqlalchemy import (
    CHAR,
    BigInteger,
    Column,
    Index,
    Numeric,
    UniqueConstraint,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlmodel import Field, SQLModel

from common.tables import (
    TenantModeKey,
    TenantRow,
    inbox_table,
    now_field,
    outbox_table,
    table_of,
    text_field,
    time_field,
)

SCHEMA = "ledger"
MONEY = Numeric(38, 6)


class Customer(TenantRow, table=True):
    __tablename__ = "customers"
    __table_args__ = (
        Index("customers_scope", "tenant_id", "mode", text("id DESC")),
        {"schema": SCHEMA},
    )

    account_type: str = text_field()
    email: str = text_field()
    country_code: str = Field(sa_column=Column(CHAR(2), nullable=False))
    service_user_id: str = text_field()
    full_name: str | None = text_field(nullable=True)
    company_name: str | None = text_field(nullable=True)
    registration_number: str | None = text_field(nullable=True)
    phone_e164: str | None = text_field(nullable=True)
    created_at: datetime = now_field()


class Wallet(TenantRow, table=True):
    __tablename__ = "wallets"
    __table_args__ = (
        Index("wallets_scope", "tenant_id", "mode", text("id DESC")),
        Index("wallets_customer", "customer_id", "symbol", "chain"),
        {"schema": SCHEMA},
    )

    customer_id: str = text_field(foreign_key=f"{SCHEMA}.customers.id")
    symbol: str = text_field()
    chain: str = text_field()
    deposit_address: str = text_field(unique=True)
    created_at: datetime = now_field()


class VirtualAccount(TenantRow, table=True):
    __tablename__ = "virtual_accounts"
    __table_args__ = (
        Index("virtual_accounts_scope", "tenant_id", "mode", text("id DESC")),
        {"schema": SCHEMA},
    )

    customer_id: str = text_field(foreign_key=f"{SCHEMA}.customers.id")
    currency: str = text_field()
    wallet_id: str = text_field(foreign_key=f"{SCHEMA}.wallets.id")
    destination: dict[str, Any] = Field(sa_column=Column(JSONB, nullable=False))
    account_number: str | None = text_field(nullable=True)
    routing_number: str | None = text_field(nullable=True)
    iban: str | None = text_field(nullable=True)
    bic: str | None = text_field(nullable=True)
    bank_name: str | None = text_field(nullable=True)
    created_at: datetime = now_field()


class Account(TenantRow, table=True):
    """Chart of accounts: wallet accounts (``available`` / ``held``, never negative, kept in
    step with their postings) and external ones (``deposits`` / ``payouts``, derived)."""

    __tablename__ = "accounts"
    __table_args__ = {"schema": SCHEMA}

    currency: str = text_field()
    kind: str = text_field()
    wallet_id: str | None = text_field(nullable=True, foreign_key=f"{SCHEMA}.wallets.id")
    balance: Decimal = Field(sa_column=Column(MONEY, nullable=False, server_default=text("0")))


class JournalEntry(TenantRow, table=True):
    """An entry and its link in its tenant's and mode's hash chain (``ledger.core.chain``)."""

    __tablename__ = "journal_entries"
    __table_args__ = (
        Index("journal_entries_transfer", "transfer_id"),
        UniqueConstraint("tenant_id", "mode", "seq", name="journal_entries_chain"),
        {"schema": SCHEMA},
    )

    kind: str = text_field()
    transfer_id: str | None = text_field(nullable=True)
    deposit_id: str | None = text_field(nullable=True)
    created_at: datetime = now_field()
    seq: int = Field(sa_column=Column(BigInteger, nullable=False))
    hash: str = text_field()


class JournalChain(TenantModeKey, table=True):
    """The head of one tenant's and mode's hash chain: its last entry's ``seq`` and ``hash``."""

    __tablename__ = "journal_chains"
    __table_args__ = {"schema": SCHEMA}

    seq: int = Field(sa_column=Column(BigInteger, nullable=False))
    head_hash: str = text_field()


class Posting(SQLModel, table=True):
    __tablename__ = "postings"
    __table_args__ = (
        Index("postings_entry", "entry_id"),
        Index("postings_account", "account_id"),
        {"schema": SCHEMA},
    )

    id: int | None = Field(default=None, sa_column=Column(BigInteger, primary_key=True, autoincrement=True))
    entry_id: str = text_field(foreign_key=f"{SCHEMA}.journal_entries.id")
    account_id: str = text_field(foreign_key=f"{SCHEMA}.accounts.id")
    currency: str = text_field()
    amount: Decimal = Field(sa_column=Column(MONEY, nullable=False))


class Transfer(TenantRow, table=True):
    """Transfers and payouts; ``state`` changes only through ``states.transition``."""

    __tablename__ = "transfers"
    __table_args__ = (
        UniqueConstraint("tenant_id", "mode", "idempotency_key", name="transfers_idempotency"),
        Index("transfers_scope", "tenant_id", "mode", "kind", text("id DESC")),
        Index("transfers_due", "next_step_at", postgresql_where=text("next_step_at IS NOT NULL")),
        {"schema": SCHEMA},
    )

    kind: str = text_field()
    route: str = text_field()
    state: str = text_field()
    previous_state: str | None = text_field(nullable=True)
    amount: Decimal = Field(sa_column=Column(MONEY, nullable=False))
    # The developer fee, charged on completion: the destination receives amount - fee_amount.
    fee_amount: Decimal = Field(
        default=Decimal(0), sa_column=Column(MONEY, nullable=False, server_default=text("0"))
    )
    currency: str = text_field()
    source_wallet_id: str = text_field(foreign_key=f"{SCHEMA}.wallets.id")
    destination_wallet_id: str | None = text_field(nullable=True, foreign_key=f"{SCHEMA}.wallets.id")
    source: dict[str, Any] = Field(sa_column=Column(JSONB, nullable=False))
    destination: dict[str, Any] = Field(sa_column=Column(JSONB, nullable=False))
    developer_fee: dict[str, Any] | None = Field(
        default=None, sa_column=Column(JSONB(none_as_null=True), nullable=True)
    )
    idempotency_key: str = text_field()
    decision_id: str | None = text_field(nullable=True)
    next_step_at: datetime | None = time_field(nullable=True)
    created_at: datetime = now_field()
    updated_at: datetime = now_field()


class StateChange(SQLModel, table=True):
    __tablename__ = "state_changes"
    __table_args__ = (Index("state_changes_transfer", "transfer_id", "id"), {"schema": SCHEMA})

    id: int | None = Field(default=None, sa_column=Column(BigInteger, primary_key=True, autoincrement=True))
    transfer_id: str = text_field(foreign_key=f"{SCHEMA}.transfers.id")
    from_state: str | None = text_field(nullable=True)
    to_state: str = text_field()
    cause: str = text_field()
    request_id: str | None = text_field(nullable=True)
    at: datetime = now_field()


class Deposit(TenantRow, table=True):
    __tablename__ = "deposits"
    __table_args__ = {"schema": SCHEMA}

    virtual_account_id: str = text_field(foreign_key=f"{SCHEMA}.virtual_accounts.id")
    wallet_id: str = text_field(foreign_key=f"{SCHEMA}.wallets.id")
    fiat_currency: str = text_field()
    fiat_amount: Decimal = Field(sa_column=Column(MONEY, nullable=False))
    currency: str = text_field()
    amount: Decimal = Field(sa_column=Column(MONEY, nullable=False))
    created_at: datetime = now_field()


class WalletBalances(NamedTuple):
    """A wallet as partners read it: the row and the balances of its two accounts."""

    wallet: Wallet
    available_balance: Decimal
    held_balance: Decimal

    @property
    def id(self) -> str:
        return self.wallet.id


outbox = outbox_table(SCHEMA, answers_from_inbox=True)  # its answers are its inbox's results
inbox = inbox_table(SCHEMA)

# Core tables, for bulk statements.
customers = table_of(Customer)
wallets = table_of(Wallet)
virtual_accounts = table_of(VirtualAccount)
accounts = table_of(Account)
journal_entries = table_of(JournalEntry)
journal_chains = table_of(JournalChain)
postings = table_of(Posting)
transfers = table_of(Transfer)
state_changes = table_of(StateChange)
deposits = table_of(Deposit)

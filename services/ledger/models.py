"""The ``ledger`` schema as SQLModel tables, matching ``migrations/versions`` column for column.

Triggers (balanced entries, append-only postings) and CHECK constraints live in the
migrations only; ``tests/integration/test_models_drift.py`` checks that these models and the migrations
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
    DateTime,
    ForeignKey,
    Index,
    Numeric,
    Table,
    Text,
    UniqueConstraint,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlmodel import Field, SQLModel

from common.contracts.base import Mode
from common.tables import inbox_table, outbox_table

SCHEMA = "ledger"
MONEY = Numeric(38, 6)


def _text(*, pk: bool = False, null: bool = False, fk: str | None = None, unique: bool = False) -> Any:
    args: list[Any] = [ForeignKey(f"{SCHEMA}.{fk}")] if fk else []
    return Field(sa_column=Column(Text, *args, primary_key=pk, nullable=null, unique=unique or None))


def _created() -> Any:
    return Field(sa_column=Column(DateTime(timezone=True), nullable=False, server_default=func.now()))


class Customer(SQLModel, table=True):
    __tablename__ = "customers"
    __table_args__ = (
        Index("customers_scope", "tenant_id", "mode", text("id DESC")),
        {"schema": SCHEMA},
    )

    id: str = _text(pk=True)
    tenant_id: str = _text()
    mode: Mode = _text()
    account_type: str = _text()
    email: str = _text()
    country_code: str = Field(sa_column=Column(CHAR(2), nullable=False))
    service_user_id: str = _text()
    full_name: str | None = _text(null=True)
    company_name: str | None = _text(null=True)
    registration_number: str | None = _text(null=True)
    phone_e164: str | None = _text(null=True)
    created_at: datetime = _created()


class Wallet(SQLModel, table=True):
    __tablename__ = "wallets"
    __table_args__ = (
        Index("wallets_scope", "tenant_id", "mode", text("id DESC")),
        Index("wallets_customer", "customer_id", "symbol", "chain"),
        {"schema": SCHEMA},
    )

    id: str = _text(pk=True)
    tenant_id: str = _text()
    mode: Mode = _text()
    customer_id: str = _text(fk="customers.id")
    symbol: str = _text()
    chain: str = _text()
    deposit_address: str = _text(unique=True)
    created_at: datetime = _created()


class VirtualAccount(SQLModel, table=True):
    __tablename__ = "virtual_accounts"
    __table_args__ = (
        Index("virtual_accounts_scope", "tenant_id", "mode", text("id DESC")),
        {"schema": SCHEMA},
    )

    id: str = _text(pk=True)
    tenant_id: str = _text()
    mode: Mode = _text()
    customer_id: str = _text(fk="customers.id")
    currency: str = _text()
    wallet_id: str = _text(fk="wallets.id")
    destination: dict[str, Any] = Field(sa_column=Column(JSONB, nullable=False))
    account_number: str | None = _text(null=True)
    routing_number: str | None = _text(null=True)
    iban: str | None = _text(null=True)
    bic: str | None = _text(null=True)
    bank_name: str | None = _text(null=True)
    created_at: datetime = _created()


class Account(SQLModel, table=True):
    """Chart of accounts: wallet accounts (``available`` / ``held``, never negative, kept in
    step with their postings) and external ones (``deposits`` / ``payouts``, derived)."""

    __tablename__ = "accounts"
    __table_args__ = {"schema": SCHEMA}

    id: str = _text(pk=True)
    tenant_id: str = _text()
    mode: Mode = _text()
    currency: str = _text()
    kind: str = _text()
    wallet_id: str | None = _text(null=True, fk="wallets.id")
    balance: Decimal = Field(sa_column=Column(MONEY, nullable=False, server_default=text("0")))


class JournalEntry(SQLModel, table=True):
    """An entry and its link in its tenant's and mode's hash chain (``ledger.chain``)."""

    __tablename__ = "journal_entries"
    __table_args__ = (
        Index("journal_entries_transfer", "transfer_id"),
        UniqueConstraint("tenant_id", "mode", "seq", name="journal_entries_chain"),
        {"schema": SCHEMA},
    )

    id: str = _text(pk=True)
    tenant_id: str = _text()
    mode: Mode = _text()
    kind: str = _text()
    transfer_id: str | None = _text(null=True)
    deposit_id: str | None = _text(null=True)
    created_at: datetime = _created()
    seq: int = Field(sa_column=Column(BigInteger, nullable=False))
    hash: str = _text()


class JournalChain(SQLModel, table=True):
    """The head of one tenant's and mode's hash chain: its last entry's ``seq`` and ``hash``."""

    __tablename__ = "journal_chains"
    __table_args__ = {"schema": SCHEMA}

    tenant_id: str = _text(pk=True)
    mode: Mode = _text(pk=True)
    seq: int = Field(sa_column=Column(BigInteger, nullable=False))
    head_hash: str = _text()


class Posting(SQLModel, table=True):
    __tablename__ = "postings"
    __table_args__ = (
        Index("postings_entry", "entry_id"),
        Index("postings_account", "account_id"),
        {"schema": SCHEMA},
    )

    id: int | None = Field(default=None, sa_column=Column(BigInteger, primary_key=True, autoincrement=True))
    entry_id: str = _text(fk="journal_entries.id")
    account_id: str = _text(fk="accounts.id")
    currency: str = _text()
    amount: Decimal = Field(sa_column=Column(MONEY, nullable=False))


class Transfer(SQLModel, table=True):
    """Transfers and payouts; ``state`` changes only through ``states.transition``."""

    __tablename__ = "transfers"
    __table_args__ = (
        UniqueConstraint("tenant_id", "mode", "idempotency_key", name="transfers_idempotency"),
        Index("transfers_scope", "tenant_id", "mode", "kind", text("id DESC")),
        Index("transfers_due", "next_step_at", postgresql_where=text("next_step_at IS NOT NULL")),
        {"schema": SCHEMA},
    )

    id: str = _text(pk=True)
    tenant_id: str = _text()
    mode: Mode = _text()
    kind: str = _text()
    route: str = _text()
    state: str = _text()
    previous_state: str | None = _text(null=True)
    amount: Decimal = Field(sa_column=Column(MONEY, nullable=False))
    # The developer fee, charged on completion: the destination receives amount - fee_amount.
    fee_amount: Decimal = Field(
        default=Decimal(0), sa_column=Column(MONEY, nullable=False, server_default=text("0"))
    )
    currency: str = _text()
    source_wallet_id: str = _text(fk="wallets.id")
    destination_wallet_id: str | None = _text(null=True, fk="wallets.id")
    source: dict[str, Any] = Field(sa_column=Column(JSONB, nullable=False))
    destination: dict[str, Any] = Field(sa_column=Column(JSONB, nullable=False))
    developer_fee: dict[str, Any] | None = Field(
        default=None, sa_column=Column(JSONB(none_as_null=True), nullable=True)
    )
    idempotency_key: str = _text()
    decision_id: str | None = _text(null=True)
    next_step_at: datetime | None = Field(
        default=None, sa_column=Column(DateTime(timezone=True), nullable=True)
    )
    created_at: datetime = _created()
    updated_at: datetime = _created()


class StateChange(SQLModel, table=True):
    __tablename__ = "state_changes"
    __table_args__ = (Index("state_changes_transfer", "transfer_id", "id"), {"schema": SCHEMA})

    id: int | None = Field(default=None, sa_column=Column(BigInteger, primary_key=True, autoincrement=True))
    transfer_id: str = _text(fk="transfers.id")
    from_state: str | None = _text(null=True)
    to_state: str = _text()
    cause: str = _text()
    request_id: str | None = _text(null=True)
    at: datetime = _created()


class Deposit(SQLModel, table=True):
    __tablename__ = "deposits"
    __table_args__ = {"schema": SCHEMA}

    id: str = _text(pk=True)
    tenant_id: str = _text()
    mode: Mode = _text()
    virtual_account_id: str = _text(fk="virtual_accounts.id")
    wallet_id: str = _text(fk="wallets.id")
    fiat_currency: str = _text()
    fiat_amount: Decimal = Field(sa_column=Column(MONEY, nullable=False))
    currency: str = _text()
    amount: Decimal = Field(sa_column=Column(MONEY, nullable=False))
    created_at: datetime = _created()


class WalletBalances(NamedTuple):
    """A wallet as partners read it: the row and the balances of its two accounts."""

    wallet: Wallet
    available_balance: Decimal
    held_balance: Decimal

    @property
    def id(self) -> str:
        return self.wallet.id


outbox = outbox_table(SCHEMA)
inbox = inbox_table(SCHEMA)

# Core tables, for bulk statements.
customers: Table = SQLModel.metadata.tables["ledger.customers"]
wallets: Table = SQLModel.metadata.tables["ledger.wallets"]
virtual_accounts: Table = SQLModel.metadata.tables["ledger.virtual_accounts"]
accounts: Table = SQLModel.metadata.tables["ledger.accounts"]
journal_entries: Table = SQLModel.metadata.tables["ledger.journal_entries"]
journal_chains: Table = SQLModel.metadata.tables["ledger.journal_chains"]
postings: Table = SQLModel.metadata.tables["ledger.postings"]
transfers: Table = SQLModel.metadata.tables["ledger.transfers"]
state_changes: Table = SQLModel.metadata.tables["ledger.state_changes"]
deposits: Table = SQLModel.metadata.tables["ledger.deposits"]

"""The tables of the ``compliance`` schema, declared once (SQLModel): the source for Alembic
autogenerate and for the statements in ``compliance.repository``.

The decisions table is also the inbox (a command id is decided once, and a decision stores
the message it publishes, so a redelivered command answers the same); what a batch publishes
leaves through the outbox (common.outbox), as in every service that emits.
"""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import (
    CHAR,
    Boolean,
    Column,
    Date,
    Index,
    Integer,
    LargeBinary,
    Numeric,
)
from sqlalchemy import text as sql_text
from sqlalchemy.dialects.postgresql import JSONB
from sqlmodel import Field, SQLModel

from common.tables import TenantModeKey, TenantRow, now_field, outbox_table, table_of, text_field, time_field

SCHEMA = "compliance"
MONEY = Numeric(30, 6)


class ComplianceDecision(SQLModel, table=True):
    """One decision per command id, with its inputs and the message it published."""

    __tablename__ = "decisions"
    __table_args__ = (
        # listed newest first by id (time-ordered ids): the primary key for every tenant's
        Index("decisions_tenant", "tenant_id", sql_text("id DESC")),
        # a transfer id names one command: a second command naming it is refused
        Index(
            "decisions_transfer_id",
            "transfer_id",
            unique=True,
            postgresql_where=sql_text("transfer_id IS NOT NULL"),
        ),
        {"schema": SCHEMA},
    )

    id: str = text_field(primary_key=True)
    command_id: str = text_field(unique=True)
    request_id: str = text_field()
    tenant_id: str = text_field()
    mode: str = text_field()
    command_type: str = text_field()
    outcome: str = text_field()
    rule: str = text_field()
    reason: str | None = text_field(nullable=True)
    inputs: dict[str, Any] = Field(sa_column=Column(JSONB, nullable=False))
    out_topic: str = text_field()
    out_key: bytes | None = Field(default=None, sa_column=Column(LargeBinary))
    out_partition: int | None = Field(default=None, sa_column=Column(Integer))
    # What it published to the caller (a refusal, an answer); None for a command approved to
    # the ledger: the signed command is published once (the outbox) and rebuilt, signed
    # again, from the command and this decision if it comes again (compliance.service).
    out_payload: bytes | None = Field(default=None, sa_column=Column(LargeBinary))
    created_at: datetime = now_field()
    # the transfer this decision is about (a transfer or payout; None for the rest, and for a
    # refusal of a transfer id another command holds)
    transfer_id: str | None = text_field(nullable=True)
    # What an approved transfer took from its day's cap (migration 0007: the hold is kept on
    # its decision, not in a row of its own), so a failure gives it back once, and only the
    # failure of this command: None for every other decision.
    hold_currency: str | None = text_field(nullable=True)
    hold_day: date | None = Field(default=None, sa_column=Column(Date))
    hold_amount: Decimal | None = Field(default=None, sa_column=Column(MONEY))
    hold_released_at: datetime | None = time_field(nullable=True)


class ComplianceParty(TenantModeKey, table=True):
    """The party registry: customers, wallets and accounts with the customer they belong to."""

    __tablename__ = "parties"
    __table_args__ = {"schema": SCHEMA}

    party_id: str = text_field(primary_key=True)
    kind: str = text_field()
    customer_id: str | None = text_field(nullable=True)
    country_code: str | None = Field(default=None, sa_column=Column(CHAR(2)))


class ComplianceRoute(TenantModeKey, table=True):
    __tablename__ = "routes"
    __table_args__ = {"schema": SCHEMA}

    rail: str = text_field(primary_key=True)
    currency: str = text_field(primary_key=True)
    approved: bool = Field(sa_column=Column(Boolean, nullable=False))
    updated_by: str | None = text_field(nullable=True)
    updated_at: datetime = now_field()


class ComplianceCap(TenantModeKey, table=True):
    __tablename__ = "caps"
    __table_args__ = {"schema": SCHEMA}

    per_transfer: Decimal = Field(sa_column=Column(MONEY, nullable=False))
    daily: Decimal = Field(sa_column=Column(MONEY, nullable=False))
    review_threshold: Decimal | None = Field(default=None, sa_column=Column(MONEY))
    updated_by: str | None = text_field(nullable=True)
    updated_at: datetime = now_field()


class ComplianceExternalAccount(TenantRow, table=True):
    __tablename__ = "external_accounts"
    __table_args__ = (
        Index("external_accounts_owner", "tenant_id", "mode", "customer_id"),
        {"schema": SCHEMA},
    )

    customer_id: str = text_field()
    rail: str = text_field()
    currency: str = text_field()
    approved: bool = Field(sa_column=Column(Boolean, nullable=False))
    account_number: str | None = text_field(nullable=True)
    routing_number: str | None = text_field(nullable=True)
    iban: str | None = text_field(nullable=True)
    bic: str | None = text_field(nullable=True)
    updated_by: str | None = text_field(nullable=True)
    created_at: datetime = now_field()
    updated_at: datetime = now_field()


class ComplianceCapUsage(TenantModeKey, table=True):
    """What a (tenant, mode, currency, UTC day) has used of its daily cap."""

    __tablename__ = "cap_usage"
    __table_args__ = {"schema": SCHEMA}

    currency: str = text_field(primary_key=True)
    day: date = Field(sa_column=Column(Date, primary_key=True))
    used: Decimal = Field(sa_column=Column(MONEY, nullable=False))


class ComplianceCapHold(SQLModel, table=True):
    """What an approved transfer took from its day's cap, for transfers decided before
    migration 0007 (and by instances of the release before it, during a rolling upgrade):
    later holds are kept on their decision (``ComplianceDecision.hold_*``). Releases give
    back from both; ``compliance.holds`` (a view) lists both."""

    __tablename__ = "cap_holds"
    __table_args__ = {"schema": SCHEMA}

    transfer_id: str = text_field(primary_key=True)
    tenant_id: str = text_field()
    mode: str = text_field()
    currency: str = text_field()
    day: date = Field(sa_column=Column(Date, nullable=False))
    amount: Decimal = Field(sa_column=Column(MONEY, nullable=False))
    released_at: datetime | None = time_field(nullable=True)
    # the command whose claim this is: only a release reporting that command's failure gives
    # it back (None for holds taken before it was recorded)
    command_id: str | None = text_field(nullable=True)


class ComplianceScreenedAddress(SQLModel, table=True):
    """An on-chain address operators screened: transfers to it are refused. ``address`` in its
    compared form (EVM lower case; base58 as given)."""

    __tablename__ = "screened_addresses"
    __table_args__ = (Index("screened_by_address", "address"), {"schema": SCHEMA})

    chain: str = text_field(primary_key=True)
    address: str = text_field(primary_key=True)
    reason: str = text_field()
    added_by: str | None = text_field(nullable=True)
    created_at: datetime = now_field()


decisions = table_of(ComplianceDecision)
parties = table_of(ComplianceParty)
routes = table_of(ComplianceRoute)
caps = table_of(ComplianceCap)
external_accounts = table_of(ComplianceExternalAccount)
cap_usage = table_of(ComplianceCapUsage)
cap_holds = table_of(ComplianceCapHold)
screened_addresses = table_of(ComplianceScreenedAddress)


outbox = outbox_table(SCHEMA)

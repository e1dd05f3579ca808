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
    DateTime,
    Index,
    Integer,
    LargeBinary,
    Numeric,
    Text,
)
from sqlalchemy import text as sql_text
from sqlalchemy.dialects.postgresql import JSONB
from sqlmodel import Field, SQLModel

from common.tables import now_field, outbox_table, table_of

SCHEMA = "compliance"
MONEY = Numeric(30, 6)


def _text(*, nullable: bool = False, primary_key: bool = False) -> Any:
    # sa_type, not sa_column: a Column object cannot be shared by the tables inheriting it.
    if nullable:
        return Field(default=None, sa_type=Text, nullable=True)
    return Field(sa_type=Text, nullable=False, primary_key=primary_key)


class _TenantModeKey(SQLModel):
    """The (tenant_id, mode) that leads the primary key of the per-tenant policy tables."""

    tenant_id: str = _text(primary_key=True)
    mode: str = _text(primary_key=True)


class ComplianceDecision(SQLModel, table=True):
    """One decision per command id, with its inputs and the message it published."""

    __tablename__ = "decisions"
    __table_args__ = (
        Index("decisions_tenant", "tenant_id", sql_text("id DESC")),
        Index("decisions_newest", sql_text("created_at DESC"), sql_text("id DESC")),
        Index("decisions_tenant_newest", "tenant_id", sql_text("created_at DESC"), sql_text("id DESC")),
        {"schema": SCHEMA},
    )

    id: str = _text(primary_key=True)
    command_id: str = Field(sa_column=Column(Text, nullable=False, unique=True))
    request_id: str = _text()
    tenant_id: str = _text()
    mode: str = _text()
    command_type: str = _text()
    outcome: str = _text()
    rule: str = _text()
    reason: str | None = _text(nullable=True)
    inputs: dict[str, Any] = Field(sa_column=Column(JSONB, nullable=False))
    out_topic: str = _text()
    out_key: bytes | None = Field(default=None, sa_column=Column(LargeBinary))
    out_partition: int | None = Field(default=None, sa_column=Column(Integer))
    out_payload: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    created_at: datetime = now_field()


class ComplianceParty(_TenantModeKey, table=True):
    """The party registry: customers, wallets and accounts with the customer they belong to."""

    __tablename__ = "parties"
    __table_args__ = {"schema": SCHEMA}

    party_id: str = _text(primary_key=True)
    kind: str = _text()
    customer_id: str | None = _text(nullable=True)
    country_code: str | None = Field(default=None, sa_column=Column(CHAR(2)))


class ComplianceRoute(_TenantModeKey, table=True):
    __tablename__ = "routes"
    __table_args__ = {"schema": SCHEMA}

    rail: str = _text(primary_key=True)
    currency: str = _text(primary_key=True)
    approved: bool = Field(sa_column=Column(Boolean, nullable=False))
    updated_by: str | None = _text(nullable=True)
    updated_at: datetime = now_field()


class ComplianceCap(_TenantModeKey, table=True):
    __tablename__ = "caps"
    __table_args__ = {"schema": SCHEMA}

    per_transfer: Decimal = Field(sa_column=Column(MONEY, nullable=False))
    daily: Decimal = Field(sa_column=Column(MONEY, nullable=False))
    review_threshold: Decimal | None = Field(default=None, sa_column=Column(MONEY))
    updated_by: str | None = _text(nullable=True)
    updated_at: datetime = now_field()


class ComplianceExternalAccount(SQLModel, table=True):
    __tablename__ = "external_accounts"
    __table_args__ = (
        Index("external_accounts_owner", "tenant_id", "mode", "customer_id"),
        {"schema": SCHEMA},
    )

    id: str = _text(primary_key=True)
    tenant_id: str = _text()
    mode: str = _text()
    customer_id: str = _text()
    rail: str = _text()
    currency: str = _text()
    approved: bool = Field(sa_column=Column(Boolean, nullable=False))
    account_number: str | None = _text(nullable=True)
    routing_number: str | None = _text(nullable=True)
    iban: str | None = _text(nullable=True)
    bic: str | None = _text(nullable=True)
    updated_by: str | None = _text(nullable=True)
    created_at: datetime = now_field()
    updated_at: datetime = now_field()


class ComplianceCapUsage(_TenantModeKey, table=True):
    """What a (tenant, mode, currency, UTC day) has used of its daily cap."""

    __tablename__ = "cap_usage"
    __table_args__ = {"schema": SCHEMA}

    currency: str = _text(primary_key=True)
    day: date = Field(sa_column=Column(Date, primary_key=True))
    used: Decimal = Field(sa_column=Column(MONEY, nullable=False))


class ComplianceCapHold(SQLModel, table=True):
    """What each approved transfer took from its day's cap, so a failure gives it back once."""

    __tablename__ = "cap_holds"
    __table_args__ = {"schema": SCHEMA}

    transfer_id: str = _text(primary_key=True)
    tenant_id: str = _text()
    mode: str = _text()
    currency: str = _text()
    day: date = Field(sa_column=Column(Date, nullable=False))
    amount: Decimal = Field(sa_column=Column(MONEY, nullable=False))
    released_at: datetime | None = Field(default=None, sa_column=Column(DateTime(timezone=True)))


class ComplianceScreenedAddress(SQLModel, table=True):
    """An on-chain address operators screened: transfers to it are refused (contract 12.4).
    ``address`` in its compared form (EVM lower case; base58 as given)."""

    __tablename__ = "screened_addresses"
    __table_args__ = (Index("screened_by_address", "address"), {"schema": SCHEMA})

    chain: str = _text(primary_key=True)
    address: str = _text(primary_key=True)
    reason: str = _text()
    added_by: str | None = _text(nullable=True)
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

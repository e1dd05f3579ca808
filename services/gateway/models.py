"""The table of the ``gateway`` schema (SQLModel), and the gateway's read-only view of the
identity tables it looks up.

``identity`` belongs to admin (``admin.models`` declares it for migrations); a service never
imports another, so the gateway names the columns it reads in a private ``MetaData``, which
Alembic never sees.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    ARRAY,
    Boolean,
    Column,
    DateTime,
    Integer,
    LargeBinary,
    MetaData,
    Table,
    Text,
    UniqueConstraint,
    Uuid,
    func,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlmodel import Field, SQLModel

SCHEMA = "gateway"


def _text(*, nullable: bool = False) -> Any:
    return Field(sa_column=Column(Text, nullable=nullable))


def _ts(*, nullable: bool = True) -> Any:
    return Field(sa_column=Column(DateTime(timezone=True), nullable=nullable))


class OnboardingAuthorization(SQLModel, table=True):
    """A signed, short-lived, single-use signup link."""

    __tablename__ = "onboarding_authorizations"
    __table_args__ = (UniqueConstraint("tenant_id", "mode", "idempotency_key"), {"schema": SCHEMA})

    id: str = Field(sa_column=Column(Text, primary_key=True))
    tenant_id: str = _text()
    mode: str = _text()
    idempotency_key: str | None = _text(nullable=True)
    request_id: str = _text()
    service_user_id: str = _text()
    email: str | None = _text(nullable=True)
    account_type: str | None = _text(nullable=True)
    redirect_url: str | None = _text(nullable=True)
    expires_at: datetime = _ts(nullable=False)
    created_at: datetime = Field(
        sa_column=Column(DateTime(timezone=True), nullable=False, server_default=func.now())
    )
    # a signup in flight: the exact command sent, so a retry resends the same one
    pending_command: bytes | None = Field(default=None, sa_column=Column(LargeBinary))
    pending_at: datetime | None = _ts()
    # consumption: set once, by the first completed signup
    used_at: datetime | None = _ts()
    customer_id: str | None = _text(nullable=True)


onboarding_authorizations: Table = OnboardingAuthorization.__table__  # type: ignore[attr-defined]

# ---- read-only view of identity (owned by admin) ----
_identity = MetaData(schema="identity")

tenants = Table(
    "tenants",
    _identity,
    Column("id", Uuid, primary_key=True),
    Column("name", Text),
    Column("default_mode", Text),
    Column("rate_limit_per_minute", Integer),
    Column("metadata", JSONB),
    Column("live_enabled", Boolean),
    Column("branding_approved_at", DateTime(timezone=True)),
)

api_keys = Table(
    "api_keys",
    _identity,
    Column("id", Text, primary_key=True),
    Column("tenant_id", Uuid),
    Column("key_hash", Text),
    Column("mode", Text),
    Column("scopes", ARRAY(Text)),
    Column("revoked_at", DateTime(timezone=True)),
)

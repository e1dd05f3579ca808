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
from sqlalchemy.types import TypeEngine
from sqlmodel import Field, SQLModel

from common.tables import table_of

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


onboarding_authorizations = table_of(OnboardingAuthorization)

# ---- read-only view of identity (owned by admin): the columns the gateway reads ----
_identity = MetaData(schema="identity")


def _view(table: str, /, **columns: TypeEngine[Any]) -> Table:
    return Table(table, _identity, *(Column(n, t, primary_key=n == "id") for n, t in columns.items()))


tenants = _view(
    "tenants",
    id=Uuid(),
    name=Text(),
    default_mode=Text(),
    rate_limit_per_minute=Integer(),
    metadata=JSONB(),
    live_enabled=Boolean(),
    branding_approved_at=DateTime(timezone=True),
)
api_keys = _view(
    "api_keys",
    id=Text(),
    tenant_id=Uuid(),
    key_hash=Text(),
    mode=Text(),
    scopes=ARRAY(Text),
    revoked_at=DateTime(timezone=True),
)

"""The tables of the ``identity`` schema, declared once (SQLModel): the source for Alembic
autogenerate and for the statements in ``admin.repository``.

The gateway reads ``tenants`` and ``api_keys`` through its own read-only view of the columns
it needs (``gateway.models``): a service never imports another.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ARRAY,
    BigInteger,
    Boolean,
    Column,
    DateTime,
    ForeignKey,
    Identity,
    Index,
    Integer,
    LargeBinary,
    Text,
    Uuid,
    func,
)
from sqlalchemy import text as sql_text
from sqlalchemy.dialects.postgresql import JSONB
from sqlmodel import Field, SQLModel

from common.tables import outbox_table, table_of

SCHEMA = "identity"


def _now() -> Any:
    return Field(sa_column=Column(DateTime(timezone=True), nullable=False, server_default=func.now()))


def _text(*, nullable: bool = False) -> Any:
    return Field(sa_column=Column(Text, nullable=nullable))


class Tenant(SQLModel, table=True):
    __tablename__ = "tenants"
    __table_args__ = (
        Index("tenants_newest", sql_text("created_at DESC"), sql_text("id DESC")),
        {"schema": SCHEMA},
    )

    id: uuid.UUID = Field(sa_column=Column(Uuid, primary_key=True))
    name: str = Field(sa_column=Column(Text, nullable=False, unique=True))
    default_mode: str = _text()
    rate_limit_per_minute: int = Field(sa_column=Column(Integer, nullable=False))
    # ``metadata`` is SQLModel's own attribute: the column keeps its name, the field does not.
    metadata_: dict[str, Any] = Field(
        sa_column=Column("metadata", JSONB, nullable=False, server_default=sql_text("'{}'::jsonb"))
    )
    live_enabled: bool = Field(sa_column=Column(Boolean, nullable=False, server_default=sql_text("false")))
    created_at: datetime = _now()
    updated_at: datetime = _now()
    branding_approved_by: str | None = _text(nullable=True)
    branding_approved_at: datetime | None = Field(default=None, sa_column=Column(DateTime(timezone=True)))


class ApiKey(SQLModel, table=True):
    __tablename__ = "api_keys"
    __table_args__ = (
        Index("api_keys_tenant", "tenant_id", sql_text("created_at DESC")),
        {"schema": SCHEMA},
    )

    id: str = Field(sa_column=Column(Text, primary_key=True))
    tenant_id: uuid.UUID = Field(sa_column=Column(Uuid, ForeignKey("identity.tenants.id"), nullable=False))
    key_hash: str = Field(sa_column=Column(Text, nullable=False, unique=True))
    key_prefix: str = _text()
    label: str = _text()
    scopes: list[str] = Field(sa_column=Column(ARRAY(Text), nullable=False))
    mode: str = _text()
    revoked_at: datetime | None = Field(default=None, sa_column=Column(DateTime(timezone=True)))
    created_at: datetime = _now()


class AuditEntry(SQLModel, table=True):
    """Append-only (a trigger refuses updates and deletes)."""

    __tablename__ = "audit_log"
    __table_args__ = (
        Index("audit_log_actor", "actor", sql_text("id DESC")),
        Index("audit_log_target", "target", sql_text("id DESC")),
        {"schema": SCHEMA},
    )

    id: int | None = Field(default=None, sa_column=Column(BigInteger, primary_key=True, autoincrement=True))
    at: datetime = _now()
    actor: str = _text()
    action: str = _text()
    request_id: str = _text()
    outcome: str = _text()
    target: str | None = _text(nullable=True)
    details: dict[str, Any] = Field(
        sa_column=Column(JSONB, nullable=False, server_default=sql_text("'{}'::jsonb"))
    )


class DeadLetterRecord(SQLModel, table=True):
    """A message a consumer gave up on (``<prefix>.dlq``), kept for operators to redrive."""

    __tablename__ = "dead_letters"
    __table_args__ = (Index("dead_letters_service", "service", "seq"), {"schema": SCHEMA})

    seq: int | None = Field(default=None, sa_column=Column(BigInteger, Identity(), primary_key=True))
    dead_letter_id: str = Field(sa_column=Column(Text, nullable=False, unique=True))
    service: str = Field(sa_column=Column(Text, nullable=False))
    topic: str = Field(sa_column=Column(Text, nullable=False))
    partition: int = Field(nullable=False)
    offset: int = Field(sa_column=Column(BigInteger, nullable=False))
    key: bytes | None = Field(default=None, sa_column=Column(LargeBinary, nullable=True))
    error: str = Field(sa_column=Column(Text, nullable=False))
    attempts: int = Field(nullable=False)
    request_id: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    payload: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    dead_lettered_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))
    redriven_at: datetime | None = Field(
        default=None, sa_column=Column(DateTime(timezone=True), nullable=True)
    )
    redriven_by: str | None = Field(default=None, sa_column=Column(Text, nullable=True))


tenants = table_of(Tenant)
api_keys = table_of(ApiKey)
audit_log = table_of(AuditEntry)
outbox = outbox_table(SCHEMA)

"""Identity data (tenants and their API keys): one shape, one owner (docs/architecture.md,
"Who owns which table").

Admin owns the ``identity`` schema: it is the only service that writes these tables, and its
migrations create them (``admin.models`` re-exports the models for Alembic). The gateway
authenticates every request from them, so it reads them, through these declarations and
nothing else: the shape is declared once, here, and a column admin renames breaks the
gateway's type check and its tests instead of its first request in production.
docs/architecture.md records the decision (a shared declaration rather than a read model
kept from events: authentication must see a revocation at once, and the gateway's cache is
already invalidated on admin's control events). tests/unit/test_layering.py checks that no
service names another's schema, and that only admin writes these tables.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import ARRAY, Boolean, Column, DateTime, ForeignKey, Index, Integer, Text, Uuid
from sqlalchemy import text as sql_text
from sqlalchemy.dialects.postgresql import JSONB
from sqlmodel import Field, SQLModel

from common.tables import now_field, table_of, text_field

SCHEMA = "identity"


class Tenant(SQLModel, table=True):
    __tablename__ = "tenants"
    __table_args__ = (
        Index("tenants_newest", sql_text("created_at DESC"), sql_text("id DESC")),
        # the gateway's revocation poll: tenants disabled lately (gateway.revocations)
        Index("tenants_disabled", "disabled_at", postgresql_where=sql_text("disabled_at IS NOT NULL")),
        {"schema": SCHEMA},
    )

    id: uuid.UUID = Field(sa_column=Column(Uuid, primary_key=True))
    name: str = Field(sa_column=Column(Text, nullable=False, unique=True))
    default_mode: str = text_field()
    rate_limit_per_minute: int = Field(sa_column=Column(Integer, nullable=False))
    # ``metadata`` is SQLModel's own attribute: the column keeps its name, the field does not.
    metadata_: dict[str, Any] = Field(
        sa_column=Column("metadata", JSONB, nullable=False, server_default=sql_text("'{}'::jsonb"))
    )
    live_enabled: bool = Field(sa_column=Column(Boolean, nullable=False, server_default=sql_text("false")))
    created_at: datetime = now_field()
    updated_at: datetime = now_field()
    branding_approved_by: str | None = text_field(nullable=True)
    branding_approved_at: datetime | None = Field(default=None, sa_column=Column(DateTime(timezone=True)))
    # disable_tenant: every key, access token and onboarding link of the tenant is refused
    # (403 tenant_disabled) until enable_tenant clears it (docs/security.md, "Round 4").
    disabled_at: datetime | None = Field(default=None, sa_column=Column(DateTime(timezone=True)))
    disabled_by: str | None = text_field(nullable=True)


class ApiKey(SQLModel, table=True):
    __tablename__ = "api_keys"
    __table_args__ = (
        Index("api_keys_tenant", "tenant_id", sql_text("created_at DESC")),
        Index("api_keys_revoked", "revoked_at", postgresql_where=sql_text("revoked_at IS NOT NULL")),
        {"schema": SCHEMA},
    )

    id: str = Field(sa_column=Column(Text, primary_key=True))
    tenant_id: uuid.UUID = Field(sa_column=Column(Uuid, ForeignKey("identity.tenants.id"), nullable=False))
    key_hash: str = Field(sa_column=Column(Text, nullable=False, unique=True))
    key_prefix: str = text_field()
    label: str = text_field()
    scopes: list[str] = Field(sa_column=Column(ARRAY(Text), nullable=False))
    mode: str = text_field()
    revoked_at: datetime | None = Field(default=None, sa_column=Column(DateTime(timezone=True)))
    created_at: datetime = now_field()


class AccessToken(SQLModel, table=True):
    """An access token (JWT) admin issued, by ``jti``: the token itself is never stored.
    ``revoked_at`` set by revoke_access_token refuses it from the next request on."""

    __tablename__ = "access_tokens"
    __table_args__ = (
        Index("access_tokens_tenant", "tenant_id", "expires_at"),
        Index("access_tokens_revoked", "revoked_at", postgresql_where=sql_text("revoked_at IS NOT NULL")),
        {"schema": SCHEMA},
    )

    jti: str = Field(sa_column=Column(Text, primary_key=True))
    tenant_id: uuid.UUID = Field(sa_column=Column(Uuid, ForeignKey("identity.tenants.id"), nullable=False))
    mode: str = text_field()
    expires_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))
    created_at: datetime = now_field()
    revoked_at: datetime | None = Field(default=None, sa_column=Column(DateTime(timezone=True)))
    revoked_by: str | None = text_field(nullable=True)


tenants = table_of(Tenant)
api_keys = table_of(ApiKey)
access_tokens = table_of(AccessToken)

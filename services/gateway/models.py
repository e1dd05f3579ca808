"""The table of the ``gateway`` schema (SQLModel). The identity tables the gateway reads
(tenants, API keys) are declared once in ``common.identity``; admin owns and writes them."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Column, LargeBinary, UniqueConstraint
from sqlmodel import Field

from common.identity import access_tokens, api_keys, tenants
from common.tables import TenantRow, now_field, table_of, text_field, time_field

SCHEMA = "gateway"


class OnboardingAuthorization(TenantRow, table=True):
    """A signed, short-lived, single-use signup link."""

    __tablename__ = "onboarding_authorizations"
    __table_args__ = (UniqueConstraint("tenant_id", "mode", "idempotency_key"), {"schema": SCHEMA})

    idempotency_key: str | None = text_field(nullable=True)
    request_id: str = text_field()
    service_user_id: str = text_field()
    email: str | None = text_field(nullable=True)
    account_type: str | None = text_field(nullable=True)
    redirect_url: str | None = text_field(nullable=True)
    expires_at: datetime = time_field()
    created_at: datetime = now_field()
    # a signup in flight: the exact command sent, so a retry resends the same one
    pending_command: bytes | None = Field(default=None, sa_column=Column(LargeBinary))
    pending_at: datetime | None = time_field(nullable=True)
    # consumption: set once, by the first completed signup
    used_at: datetime | None = time_field(nullable=True)
    customer_id: str | None = text_field(nullable=True)


onboarding_authorizations = table_of(OnboardingAuthorization)

# Identity (tenants, API keys) is admin's and declared once in common.identity: read here.
__all__ = ["OnboardingAuthorization", "access_tokens", "api_keys", "onboarding_authorizations", "tenants"]

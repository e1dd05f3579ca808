"""The tables of the ``identity`` schema, declared once (SQLModel): the source for Alembic
autogenerate and for the statements in ``admin.repository``.

``Tenant`` and ``ApiKey`` are declared in ``common.identity`` (the gateway reads them too) and
re-exported here: admin owns and migrates them, and is the only service that writes them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, Column, Identity, Index, LargeBinary
from sqlalchemy import text as sql_text
from sqlalchemy.dialects.postgresql import JSONB
from sqlmodel import Field, SQLModel

from common.identity import SCHEMA, AccessToken, ApiKey, Tenant, access_tokens, api_keys, tenants
from common.tables import now_field, outbox_table, table_of, text_field, time_field

__all__ = [
    "AccessToken",
    "ApiKey",
    "AuditEntry",
    "DeadLetterRecord",
    "PendingAction",
    "Tenant",
    "access_tokens",
    "api_keys",
    "audit_log",
    "outbox",
    "pending_actions",
    "tenants",
]


class AuditEntry(SQLModel, table=True):
    """Append-only (a trigger refuses updates and deletes)."""

    __tablename__ = "audit_log"
    __table_args__ = (
        Index("audit_log_actor", "actor", sql_text("id DESC")),
        Index("audit_log_target", "target", sql_text("id DESC")),
        {"schema": SCHEMA},
    )

    id: int | None = Field(default=None, sa_column=Column(BigInteger, primary_key=True, autoincrement=True))
    at: datetime = now_field()
    actor: str = text_field()
    action: str = text_field()
    request_id: str = text_field()
    outcome: str = text_field()
    target: str | None = text_field(nullable=True)
    details: dict[str, Any] = Field(
        sa_column=Column(JSONB, nullable=False, server_default=sql_text("'{}'::jsonb"))
    )


class DeadLetterRecord(SQLModel, table=True):
    """A message a consumer gave up on (``<prefix>.dlq``), kept for operators to redrive."""

    __tablename__ = "dead_letters"
    __table_args__ = (Index("dead_letters_service", "service", "seq"), {"schema": SCHEMA})

    seq: int | None = Field(default=None, sa_column=Column(BigInteger, Identity(), primary_key=True))
    dead_letter_id: str = text_field(unique=True)
    service: str = text_field()
    topic: str = text_field()
    partition: int = Field(nullable=False)
    offset: int = Field(sa_column=Column(BigInteger, nullable=False))
    key: bytes | None = Field(default=None, sa_column=Column(LargeBinary, nullable=True))
    error: str = text_field()
    attempts: int = Field(nullable=False)
    request_id: str | None = text_field(nullable=True)
    payload: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    dead_lettered_at: datetime = time_field()
    redriven_at: datetime | None = time_field(nullable=True)
    redriven_by: str | None = text_field(nullable=True)
    # Why admin refused to redrive it (origin_mismatch, origin_missing, wrong_topic, never_redriven)
    redrive_refused: str | None = text_field(nullable=True)


class PendingAction(SQLModel, table=True):
    """An operator action that moves money or changes trust, proposed by one approver and
    waiting for another's (four eyes); ``body`` is the request as proposed."""

    __tablename__ = "pending_actions"
    __table_args__ = (Index("pending_actions_state", "state", "proposed_at"), {"schema": SCHEMA})

    id: str = text_field(primary_key=True)
    action: str = text_field()
    body: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    proposed_by: str = text_field()
    proposed_at: datetime = now_field()
    expires_at: datetime = time_field()
    state: str = text_field()  # pending_approval | approved | expired
    decided_by: str | None = text_field(nullable=True)
    decided_at: datetime | None = time_field(nullable=True)


audit_log = table_of(AuditEntry)
pending_actions = table_of(PendingAction)
outbox = outbox_table(SCHEMA)

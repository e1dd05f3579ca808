"""The tables of schema ``webhooks``, declared once: Alembic compares them with the migrations
(tests/inprocess/test_models_drift.py) and ``repository`` builds its statements from them.

Class names carry the service (all services share ``SQLModel.metadata``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    DateTime,
    Index,
    Integer,
    LargeBinary,
    Text,
    UniqueConstraint,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlmodel import Field, SQLModel

from common.tables import TenantRow, inbox_table, outbox_table, table_of, text_field, time_field

SCHEMA = "webhooks"


def _now() -> Any:
    # Defaults to None in the model: a row built to be inserted leaves it to the database.
    return Field(
        default=None, sa_column=Column(DateTime(timezone=True), nullable=False, server_default=func.now())
    )


class WebhookEndpoint(TenantRow, table=True):
    """A partner's endpoint. ``next_due_at`` is the claim's hint: no pending delivery of this
    endpoint is due before it (NULL: nothing to send); see ``repository.claim_due``."""

    __tablename__ = "endpoints"
    __table_args__ = (
        Index("endpoints_scope", "tenant_id", "mode", text("id DESC")),
        Index("endpoints_due", "next_due_at", postgresql_where=text("enabled")),
        {"schema": SCHEMA},
    )

    url: str = text_field()
    secret_enc: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    # Secrets rotated out (sealed like secret_enc), newest first, each signing beside the
    # current one until its retired_until (24 h): parallel arrays, read by the claim with the
    # row, so signing needs no second query. At most MAX_RETIRED live (service.rotate_secret).
    retired_secrets_enc: list[bytes] = Field(
        default_factory=list,
        sa_column=Column(ARRAY(LargeBinary), nullable=False, server_default=text("'{}'")),
    )
    retired_until: list[datetime] = Field(
        default_factory=list,
        sa_column=Column(ARRAY(DateTime(timezone=True)), nullable=False, server_default=text("'{}'")),
    )
    # The event types delivered to this endpoint; NULL: every type.
    enabled_events: list[str] | None = Field(default=None, sa_column=Column(ARRAY(Text)))
    enabled: bool = Field(
        default=True, sa_column=Column(Boolean, nullable=False, server_default=text("true"))
    )
    disabled_reason: str | None = text_field(nullable=True)
    disabled_at: datetime | None = time_field(nullable=True)
    failing_since: datetime | None = time_field(nullable=True)
    last_success_at: datetime | None = time_field(nullable=True)
    verified_at: datetime | None = time_field(nullable=True)
    created_at: datetime | None = _now()
    next_due_at: datetime | None = time_field(nullable=True)
    # Set when the partner deleted it (it is also disabled): the row keeps its deliveries'
    # history, and the partner no longer sees it.
    deleted_at: datetime | None = time_field(nullable=True)


class WebhookEvent(SQLModel, table=True):
    """An event as delivered (the exact envelope bytes); its id dedupes redeliveries."""

    __tablename__ = "events"
    __table_args__ = (
        Index("events_received", "received_at"),
        # GET /v1/events: one tenant and mode in sequence order, either way; a number once.
        Index("events_sequence", "tenant_id", "mode", "sequence", unique=True),
        {"schema": SCHEMA},
    )

    event_id: str = text_field(primary_key=True)
    tenant_id: str = text_field()
    mode: str = text_field()
    type: str = text_field()
    body: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    received_at: datetime | None = _now()
    # The event's place among its tenant's events of its mode (``event_sequences``), also in
    # ``body``. NULL only for an event stored by a release before numbering.
    sequence: int | None = Field(default=None, sa_column=Column(BigInteger))


class WebhookEventSequence(SQLModel, table=True):
    """The last ``sequence`` given to a tenant's events in one mode: the storing transaction
    takes the next numbers from this row and holds its lock until commit."""

    __tablename__ = "event_sequences"
    __table_args__ = ({"schema": SCHEMA},)

    tenant_id: str = text_field(primary_key=True)
    mode: str = text_field(primary_key=True)
    last_sequence: int = Field(sa_column=Column(BigInteger, nullable=False))


class WebhookDelivery(SQLModel, table=True):
    """One event to one endpoint: its schedule, lease and last outcome."""

    __tablename__ = "deliveries"
    __table_args__ = (
        UniqueConstraint("event_id", "webhook_id", name="deliveries_event_id_webhook_id_key"),
        CheckConstraint("status IN ('pending', 'succeeded', 'dead')", name="deliveries_status_check"),
        # The claim walks one endpoint's due rows in order (migration 0004).
        Index(
            "deliveries_endpoint_due",
            "webhook_id",
            "next_attempt_at",
            postgresql_where=text("status = 'pending'"),
        ),
        # Leased rows per endpoint: the in-flight count reads at most the limit's worth.
        Index(
            "deliveries_leased",
            "webhook_id",
            postgresql_where=text("status = 'pending' AND lease_until IS NOT NULL"),
        ),
        Index("deliveries_by_webhook", "webhook_id", text("id DESC")),
        Index("deliveries_by_tenant", "tenant_id", text("id DESC")),
        Index("deliveries_finished", "updated_at", postgresql_where=text("status <> 'pending'")),
        {"schema": SCHEMA},
    )

    id: str = text_field(primary_key=True)
    event_id: str = text_field(foreign_key=f"{SCHEMA}.events.event_id")
    webhook_id: str = text_field(foreign_key=f"{SCHEMA}.endpoints.id")
    tenant_id: str = text_field()
    mode: str = text_field()
    event_type: str = text_field()
    status: str = Field(
        default="pending", sa_column=Column(Text, nullable=False, server_default=text("'pending'"))
    )
    attempts: int = Field(default=0, sa_column=Column(Integer, nullable=False, server_default=text("0")))
    max_attempts: int = Field(sa_column=Column(Integer, nullable=False))
    next_attempt_at: datetime | None = _now()
    lease_until: datetime | None = time_field(nullable=True)
    # Who holds (or last held) the lease, since when: a lease taken over after it expired
    # writes the lost attempt (``interrupted``) from these; attempts are written when they end.
    leased_by: str | None = text_field(nullable=True)
    leased_at: datetime | None = time_field(nullable=True)
    last_status_code: int | None = Field(default=None, sa_column=Column(Integer))
    last_error: str | None = text_field(nullable=True)
    created_at: datetime | None = _now()
    updated_at: datetime | None = _now()


class WebhookAttempt(SQLModel, table=True):
    """One HTTP attempt of a delivery (numbered; each number is sent at most once), written
    once when it ends: its outcome, or ``interrupted`` when its worker was lost (the lease
    taken over). An attempt in progress is the delivery's lease (``leased_by``, ``leased_at``)."""

    __tablename__ = "attempts"
    __table_args__ = (
        UniqueConstraint("delivery_id", "attempt", name="attempts_delivery_id_attempt_key"),
        {"schema": SCHEMA},
    )

    id: int | None = Field(default=None, sa_column=Column(BigInteger, primary_key=True, autoincrement=True))
    delivery_id: str = text_field(foreign_key=f"{SCHEMA}.deliveries.id")
    attempt: int = Field(sa_column=Column(Integer, nullable=False))
    worker: str = text_field()
    started_at: datetime | None = _now()
    finished_at: datetime | None = time_field(nullable=True)
    status_code: int | None = Field(default=None, sa_column=Column(Integer))
    latency_ms: int | None = Field(default=None, sa_column=Column(Integer))
    error: str | None = text_field(nullable=True)


inbox = inbox_table(SCHEMA)
outbox = outbox_table(SCHEMA)
endpoints = table_of(WebhookEndpoint)
events = table_of(WebhookEvent)
event_sequences = table_of(WebhookEventSequence)
deliveries = table_of(WebhookDelivery)
attempts = table_of(WebhookAttempt)

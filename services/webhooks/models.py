"""The tables of schema ``webhooks``, declared once: Alembic compares them with the migrations
(tests/integration/test_models_drift.py) and ``repository`` builds its statements from them.

Class names carry the service (all services share ``SQLModel.metadata``).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    DateTime,
    ForeignKey,
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

from common.tables import inbox_table, outbox_table

SCHEMA = "webhooks"


def _ts(*, nullable: bool = True, now: bool = False) -> Column[datetime]:
    return Column(DateTime(timezone=True), nullable=nullable, server_default=func.now() if now else None)


class WebhookEndpoint(SQLModel, table=True):
    """A partner's endpoint. ``next_due_at`` is the claim's hint: no pending delivery of this
    endpoint is due before it (NULL: nothing to send); see ``repository.claim_due``."""

    __tablename__ = "endpoints"
    __table_args__ = (
        Index("endpoints_scope", "tenant_id", "mode", text("id DESC")),
        Index("endpoints_due", "next_due_at", postgresql_where=text("enabled")),
        {"schema": SCHEMA},
    )

    id: str = Field(sa_column=Column(Text, primary_key=True))
    tenant_id: str = Field(sa_column=Column(Text, nullable=False))
    mode: str = Field(sa_column=Column(Text, nullable=False))
    url: str = Field(sa_column=Column(Text, nullable=False))
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
    # The event types delivered to this endpoint; NULL: every type (contract 12.4).
    enabled_events: list[str] | None = Field(default=None, sa_column=Column(ARRAY(Text)))
    enabled: bool = Field(
        default=True, sa_column=Column(Boolean, nullable=False, server_default=text("true"))
    )
    disabled_reason: str | None = Field(default=None, sa_column=Column(Text))
    disabled_at: datetime | None = Field(default=None, sa_column=_ts())
    failing_since: datetime | None = Field(default=None, sa_column=_ts())
    last_success_at: datetime | None = Field(default=None, sa_column=_ts())
    verified_at: datetime | None = Field(default=None, sa_column=_ts())
    created_at: datetime | None = Field(default=None, sa_column=_ts(nullable=False, now=True))
    next_due_at: datetime | None = Field(default=None, sa_column=_ts())


class WebhookEvent(SQLModel, table=True):
    """An event as delivered (the exact envelope bytes); its id dedupes redeliveries."""

    __tablename__ = "events"
    __table_args__ = (
        Index("events_received", "received_at"),
        # GET /v1/events: one tenant and mode, newest first (ids are time-ordered).
        Index("events_scope", "tenant_id", "mode", text("event_id DESC")),
        {"schema": SCHEMA},
    )

    event_id: str = Field(sa_column=Column(Text, primary_key=True))
    tenant_id: str = Field(sa_column=Column(Text, nullable=False))
    mode: str = Field(sa_column=Column(Text, nullable=False))
    type: str = Field(sa_column=Column(Text, nullable=False))
    body: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    received_at: datetime | None = Field(default=None, sa_column=_ts(nullable=False, now=True))


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

    id: str = Field(sa_column=Column(Text, primary_key=True))
    event_id: str = Field(sa_column=Column(Text, ForeignKey("webhooks.events.event_id"), nullable=False))
    webhook_id: str = Field(sa_column=Column(Text, ForeignKey("webhooks.endpoints.id"), nullable=False))
    tenant_id: str = Field(sa_column=Column(Text, nullable=False))
    mode: str = Field(sa_column=Column(Text, nullable=False))
    event_type: str = Field(sa_column=Column(Text, nullable=False))
    status: str = Field(
        default="pending", sa_column=Column(Text, nullable=False, server_default=text("'pending'"))
    )
    attempts: int = Field(default=0, sa_column=Column(Integer, nullable=False, server_default=text("0")))
    max_attempts: int = Field(sa_column=Column(Integer, nullable=False))
    next_attempt_at: datetime | None = Field(default=None, sa_column=_ts(nullable=False, now=True))
    lease_until: datetime | None = Field(default=None, sa_column=_ts())
    # Who holds (or last held) the lease, since when: a lease taken over after it expired
    # writes the lost attempt (``interrupted``) from these; attempts are written when they end.
    leased_by: str | None = Field(default=None, sa_column=Column(Text))
    leased_at: datetime | None = Field(default=None, sa_column=_ts())
    last_status_code: int | None = Field(default=None, sa_column=Column(Integer))
    last_error: str | None = Field(default=None, sa_column=Column(Text))
    created_at: datetime | None = Field(default=None, sa_column=_ts(nullable=False, now=True))
    updated_at: datetime | None = Field(default=None, sa_column=_ts(nullable=False, now=True))


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
    delivery_id: str = Field(sa_column=Column(Text, ForeignKey("webhooks.deliveries.id"), nullable=False))
    attempt: int = Field(sa_column=Column(Integer, nullable=False))
    worker: str = Field(sa_column=Column(Text, nullable=False))
    started_at: datetime | None = Field(default=None, sa_column=_ts(nullable=False, now=True))
    finished_at: datetime | None = Field(default=None, sa_column=_ts())
    status_code: int | None = Field(default=None, sa_column=Column(Integer))
    latency_ms: int | None = Field(default=None, sa_column=Column(Integer))
    error: str | None = Field(default=None, sa_column=Column(Text))


inbox = inbox_table(SCHEMA)
outbox = outbox_table(SCHEMA)
endpoints = WebhookEndpoint.__table__  # type: ignore[attr-defined]  # SQLModel's stubs omit the __table__ SQLAlchemy sets (upstream typing gap)
events = WebhookEvent.__table__  # type: ignore[attr-defined]  # SQLModel's stubs omit the __table__ SQLAlchemy sets (upstream typing gap)
deliveries = WebhookDelivery.__table__  # type: ignore[attr-defined]  # SQLModel's stubs omit the __table__ SQLAlchemy sets (upstream typing gap)
attempts = WebhookAttempt.__table__  # type: ignore[attr-defined]  # SQLModel's stubs omit the __table__ SQLAlchemy sets (upstream typing gap)

"""The tables of the ``identity`` schema, declared once (SQLModel): the source for Alembic
autogenerate and for the statements in ``admin.repository``."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Column, DateTime, Identity, Index, LargeBinary, Text
from sqlmodel import Field, SQLModel


class DeadLetterRecord(SQLModel, table=True):
    """A message a consumer gave up on (``<prefix>.dlq``), kept for operators to redrive."""

    __tablename__ = "dead_letters"
    __table_args__ = (Index("dead_letters_service", "service", "seq"), {"schema": "identity"})

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

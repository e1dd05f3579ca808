"""Shared pieces of the webhooks statements: typed array binds and SQL-made ids."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import ARRAY, DateTime, Float, Integer, Text, bindparam, literal_column

# A sortable id made in SQL (same shape as common.ids.new_id: ms timestamp + random hex).
NEW_DELIVERY_ID = literal_column(
    "'dlv_' || lpad(to_hex(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint), 12, '0')"
    " || substr(replace(gen_random_uuid()::text, '-', ''), 1, 20)",
    Text,
)
FRESH = {"populate_existing": True}


def texts(name: str) -> Any:
    return bindparam(name, type_=ARRAY(Text))


def ints(name: str) -> Any:
    return bindparam(name, type_=ARRAY(Integer))


def seconds(value: float) -> timedelta:
    return timedelta(seconds=value)


def floats(name: str) -> Any:
    return bindparam(name, type_=ARRAY(Float))


def stamps(name: str) -> Any:
    return bindparam(name, type_=ARRAY(DateTime(timezone=True)))

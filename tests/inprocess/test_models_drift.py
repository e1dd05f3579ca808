"""Every service's SQLModel tables (``<service>/models.py``) agree with its migrations: Alembic's
autogenerate, run against the test database migrated to head, finds no difference."""

from __future__ import annotations

import asyncio
import importlib

import pytest

from common.tables import schema_drift
from tests.conftest import Stack

pytestmark = pytest.mark.inprocess

SCHEMAS = {
    "ledger": "ledger",
    "compliance": "compliance",
    "webhooks": "webhooks",
    "admin": "identity",
    "gateway": "gateway",
}


@pytest.mark.parametrize("service", sorted(SCHEMAS))
def test_models_match_migrations(stack: Stack, service: str) -> None:
    importlib.import_module(f"{service}.models")
    drift = asyncio.run(schema_drift(stack.env["SLUICE_DATABASE_URL"], SCHEMAS[service]))
    assert drift == [], f"{service}: models and migrations differ: {drift}"

"""The URL the services are given for a PostgreSQL cluster (docs/operations/failover.md, "What
to give the services"): every node in the libpq multi-host form with
``target_session_attrs=read-write``, parsed by SQLAlchemy's asyncpg dialect into the host list
asyncpg tries in turn; the negative control names one node only."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from common.db import asyncpg_kwargs
from tools.chaos.pg_cluster import NODES, PgCluster, one_host

pytestmark = pytest.mark.unit


def test_the_services_url_names_every_node_and_asks_for_the_writable_one(tmp_path: Path) -> None:
    cluster = PgCluster(tmp_path, database="sluice")
    kw = asyncpg_kwargs(cluster.url())
    assert kw["host"] == ["127.0.0.1"] * len(NODES)
    assert kw["port"] == [n.port for n in cluster.nodes]
    assert kw["target_session_attrs"] == "read-write"
    assert kw["database"] == "sluice"


def test_a_role_url_made_from_it_keeps_every_node(tmp_path: Path) -> None:
    cluster = PgCluster(tmp_path)
    role = make_url(cluster.url()).set(username="sluice_ledger", password="pw")
    kw = asyncpg_kwargs(role.render_as_string(hide_password=False))
    assert kw["port"] == [n.port for n in cluster.nodes] and kw["user"] == "sluice_ledger"


def test_the_negative_control_names_only_the_first_primary(tmp_path: Path) -> None:
    cluster = PgCluster(tmp_path)
    kw = asyncpg_kwargs(one_host(cluster.url(), cluster.primary.address))
    assert (kw["host"], kw["port"]) == ("127.0.0.1", cluster.primary.port)

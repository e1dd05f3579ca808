"""Every service's Alembic history loads as Alembic loads it: each revision module has its ids and
callable ``upgrade`` and ``downgrade``, one chain per service; ``common.db.sql_migration`` runs
its statements in order."""

from __future__ import annotations

from pathlib import Path

import alembic.op
import pytest
from alembic.script import ScriptDirectory

from common.db import outbox_ddl, outbox_migration, sql_migration

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
SERVICES = sorted(p.parent.name for p in ROOT.glob("services/*/migrations"))


def test_every_service_has_migrations() -> None:
    assert SERVICES == ["admin", "compliance", "gateway", "ledger", "webhooks"]


@pytest.mark.parametrize("service", SERVICES)
def test_each_revision_has_ids_upgrade_and_downgrade_in_one_chain(service: str) -> None:
    scripts = ScriptDirectory(str(ROOT / "services" / service / "migrations"))
    files = sorted(p.name for p in (ROOT / "services" / service / "migrations" / "versions").glob("*.py"))
    chain = list(reversed(list(scripts.walk_revisions())))
    assert sorted(Path(s.path).name for s in chain) == files  # every file is a revision of the chain
    assert [s.down_revision for s in chain] == [None, *(s.revision for s in chain[:-1])]
    for s in chain:
        assert isinstance(s.module.revision, str), s.path
        assert s.module.__doc__, s.path  # the message `alembic history` shows
        # Alembic calls these and logs them by name ("Running upgrade 0001 -> 0002").
        assert callable(s.module.upgrade) and s.module.upgrade.__name__ == "upgrade", s.path
        assert callable(s.module.downgrade) and s.module.downgrade.__name__ == "downgrade", s.path


def test_a_sql_migration_runs_its_statements_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[str] = []
    monkeypatch.setattr(alembic.op, "execute", ran.append, raising=False)
    upgrade, downgrade = sql_migration(up=["CREATE a", "CREATE b"], down=["DROP b", "DROP a"])
    upgrade()
    assert ran == ["CREATE a", "CREATE b"]
    ran.clear()
    downgrade()
    assert ran == ["DROP b", "DROP a"]
    ran.clear()
    upgrade, downgrade = outbox_migration("compliance")
    upgrade()
    downgrade()
    assert ran == [*outbox_ddl("compliance"), "DROP TABLE compliance.outbox"]

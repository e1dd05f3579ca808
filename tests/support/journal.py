"""The journal's export and its standalone verifier as a partner or auditor runs them
(docs/journal-export.sql, docs/verify_journal.py), shared by the journal tests of both tiers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import Stack
from tools.stack.processes import ROOT


def _export(stack: Stack, tenant_id: str, path: Path) -> None:
    """The documented export: psql with docs/journal-export.sql."""
    url = stack.stores.database_url.replace("+asyncpg", "")
    out = subprocess.run(
        [
            "psql",
            url,
            "-v",
            f"tenant={tenant_id}",
            "-v",
            "mode=sandbox",
            "-At",
            "-f",
            "docs/journal-export.sql",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    path.write_text(out.stdout)


def _script(path: Path) -> tuple[int, str]:
    out = subprocess.run(
        [sys.executable, str(ROOT / "docs" / "verify_journal.py"), str(path)], capture_output=True, text=True
    )
    return out.returncode, (out.stdout + out.stderr).strip()


JOURNAL = ("ledger.postings", "ledger.journal_entries")  # append-only (triggers)


def _json(row: dict) -> str:
    """A row as JSON that json_populate_record reads back exactly (times, decimals as text)."""
    return json.dumps(
        {k: v.isoformat() if hasattr(v, "isoformat") else v if v is None else str(v) for k, v in row.items()}
    )

"""``python -m tools.chaos.pitr.check TENANT_ID [MODE] [--anchors-only]``: the ledger's own
``verify_journal`` and ``reconcile`` (docs/operations/backups.md, "How to check a restore";
``ledger.verification``, ``ledger.reconcile``) run once,
in one READ ONLY transaction, on the database the ledger's settings name, the anchors read from
the anchors topic of the Kafka they name (``ledger.anchors.Anchors.read``, the reader the
ledger's verify_journal uses). Prints one JSON object: ``{"verify_journal": ..., "reconcile":
..., "anchors": [...]}``, the first two the data the admin actions would answer, the last every
trusted anchor read (tenant, mode, seq, hash, when first anchored) for the caller to compare
with the journal itself. ``--anchors-only``: the anchors, nothing else.

Why not through admin: admin relays both actions to a running ledger, and a ledger that runs on
a restored database does not stay at the restored point: its sandbox simulator advances the
transfers that were pending at the target time, and it takes new commands, writing journal
entries after the restored head that the anchors of the lost history contradict. A restore is
checked before anything writes to it (docs/operations/backups.md); this is that check, with
the ledger's code and the ledger's database role.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from sqlalchemy import text

from common.contracts.base import Ctx, as_mode
from common.contracts.commands import Reconcile, VerifyJournal
from common.db import create_engine, sessionmaker
from common.ids import new_id
from common.settings import load_settings
from common.topics import Topics
from ledger import reconcile, verification
from ledger.anchors import Anchors, Found
from ledger.config import LedgerConfig


async def _never(*args: Any, **kwargs: Any) -> None:
    raise RuntimeError("the restore check publishes nothing")


async def check(tenant_id: str, mode: str, anchors_only: bool = False) -> dict[str, Any]:
    settings = load_settings("ledger")
    engine = create_engine(settings.database_url, 1, command_timeout_s=120.0)
    sessions = sessionmaker(engine)
    anchors = Anchors(settings, sessions, Topics(settings.topic_prefix).journal_anchors, _never)
    seen: list[Found] = []

    async def read() -> Found:
        seen.append(await anchors.read())
        return seen[-1]

    ledger_config = LedgerConfig(
        settle_s=settings.sandbox_settle_s,
        read_anchors=read,
        anchor_grace_s=max(3 * settings.journal_anchor_interval_s, 30.0),  # as ledger.app
    )
    if anchors_only:
        await engine.dispose()
        return {"anchors": _listed(await read())}
    whole = Ctx(request_id=new_id("req"), tenant_id="", mode=as_mode(mode))
    ctx = Ctx(request_id=new_id("req"), tenant_id=tenant_id, mode=as_mode(mode))
    try:
        async with sessions() as session, session.begin():
            await session.execute(text("SET TRANSACTION READ ONLY"))
            verified = await verification.verify_journal(
                session, VerifyJournal(command_id=new_id("cmd"), ctx=whole), ledger_config
            )
            reconciled = await reconcile.reconcile(
                session, Reconcile(command_id=new_id("cmd"), ctx=ctx), ledger_config
            )
    finally:
        await engine.dispose()
    return {
        "verify_journal": verified.data,
        "reconcile": reconciled.data,
        "anchors": _listed(seen[-1]) if seen else [],
    }


def _listed(found: Found) -> list[dict[str, Any]]:
    return [
        {"tenant_id": t, "mode": m, "seq": seq, "head_hash": h, "anchored_at": when}
        for (t, m), chain in found.chains.items()
        for seq, hashes in chain.heads.items()
        for h, when in hashes.items()
    ]


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    only = "--anchors-only" in argv
    args = [a for a in argv if a != "--anchors-only"]
    found = asyncio.run(check(args[0], args[1] if len(args) > 1 else "sandbox", only))
    print(json.dumps(found, default=str), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

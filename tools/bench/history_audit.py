"""The operator's two checks of a journal with a history (``make bench-history``): the ledger's
own ``verify_journal`` (ledger.verification: every chain recomputed from its first entry, its
anchors read back from the anchors topic, as the ledger does) and ``reconcile``
(ledger.reconcile: each tenant's totals and invariants), timed.

They run through the ledger's functions in this process on the suite's database and broker,
not through admin's endpoint: admin relays a command and waits for the ledger's answer for
``SLUICE_GATEWAY_TIMEOUT_S`` (10 s), and a journal of a million transfers takes longer than
that to walk; the work and the statements are the ledger's either way.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker, create_async_engine

from common.contracts import Ctx
from common.contracts.commands import Reconcile, VerifyJournal
from common.topics import Topics
from ledger import repository as repo
from ledger.anchors import Anchors
from ledger.config import LedgerConfig
from ledger.reconcile import reconcile
from ledger.verification import verify_journal
from tools.bench.history import MODE, Suite


@dataclass
class Audit:
    """What the two checks said and how long they took."""

    journal: dict[str, Any] = field(default_factory=dict)  # verify_journal's answer
    verify_s: float = 0.0
    reconciled: dict[str, dict[str, Any]] = field(default_factory=dict)  # tenant id -> its answer
    reconcile_s: float = 0.0

    @property
    def entries(self) -> int:
        return int(self.journal.get("entries", 0))

    @property
    def clean(self) -> bool:
        """Both checks found nothing: every chain verified, every tenant reconciled."""
        return bool(self.journal.get("ok")) and all(r.get("ok") for r in self.reconciled.values())

    def findings(self) -> list[str]:
        """What either check found, one line each (empty when clean)."""
        out = []
        if not self.journal.get("ok"):
            out.append(f"verify_journal: {self.journal.get('reason')}: {self.journal.get('problem')}")
        for tid, r in sorted(self.reconciled.items()):
            if not r.get("ok"):
                out.append(f"reconcile {tid}: {r.get('discrepancies', [])[:3]}")
        return out


def _ctx(tenant_id: str = "") -> Ctx:
    return Ctx(request_id="req_history_" + uuid.uuid4().hex, tenant_id=tenant_id, mode=MODE)


async def _run(sessions: async_sessionmaker[AsyncSession], config: LedgerConfig, audit: Audit) -> None:
    started = time.monotonic()
    async with sessions() as session, session.begin():
        cmd = VerifyJournal(command_id="cmd_" + uuid.uuid4().hex, ctx=_ctx(), mode=MODE)
        audit.journal = dict((await verify_journal(session, cmd, config)).data)
    audit.verify_s = time.monotonic() - started
    started = time.monotonic()
    async with sessions() as session, session.begin():
        tenants = [h.tenant_id for h in await repo.chain_heads(session, None, MODE)]
    for tid in tenants:
        async with sessions() as session, session.begin():
            asked = Reconcile(command_id="cmd_" + uuid.uuid4().hex, ctx=_ctx(tid), limit=10)
            audit.reconciled[tid] = dict((await reconcile(session, asked, config)).data)
    audit.reconcile_s = time.monotonic() - started


async def audit_async(env: dict[str, str], anchored: bool = True) -> Audit:
    """verify_journal over every chain of the mode (with the anchors topic read back when
    ``anchored`` and the suite anchors), then reconcile for every tenant with a chain."""
    settings = Suite.of(env).settings
    engine = create_async_engine(settings.database_url)
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    config = LedgerConfig()
    if anchored and settings.journal_anchor_verify_keys:
        anchors = Anchors(settings, sessions, Topics(settings.topic_prefix).journal_anchors, _no_publish)
        config = LedgerConfig(
            read_anchors=anchors.read, anchor_grace_s=max(3 * settings.journal_anchor_interval_s, 30.0)
        )
    audit = Audit()
    try:
        await _run(sessions, config, audit)
    finally:
        await engine.dispose()
    return audit


def audit(env: dict[str, str], anchored: bool = True) -> Audit:
    return asyncio.run(audit_async(env, anchored))


async def _no_publish(*_: Any, **__: Any) -> None:
    raise RuntimeError("the history audit reads the anchors topic, it never publishes")

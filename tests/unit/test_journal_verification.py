"""verify_journal (docs/security.md) against a fake journal: an intact chain, a changed posting, a
rewritten hash, a deleted entry, a truncated tail, several chains and several pages. The real
tampering by SQL, and the standalone script agreeing: tests/inprocess/test_journal_chain.py."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from types import SimpleNamespace
from typing import Any

import pytest

from common.contracts.base import Ctx
from common.contracts.commands import VerifyJournal
from ledger import verification
from ledger.config import LedgerConfig
from ledger.core import chain

pytestmark = pytest.mark.unit
D = Decimal
T0 = datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC)
SESSION = object()


Legs = list[tuple[str, str, Decimal]]
NO_TRANSFER = {f"t_{name}": None for name in chain.TRANSFER_FIELDS}


def entries(tenant: str, n: int, v1: int = 0) -> list[tuple[SimpleNamespace, Legs]]:
    """A chain of ``n`` entries, hashed as the journal writes them (the first ``v1`` in
    version 1, which hashed no transfer terms), as the repository reads them back."""
    out, previous = [], chain.GENESIS
    for seq in range(1, n + 1):
        legs = [(f"w{seq}.available", "USDC", D(seq)), (f"ext.{tenant}.deposits", "USDC", D(-seq))]
        e = SimpleNamespace(
            id=f"je_{tenant}_{seq}",
            tenant_id=tenant,
            mode="sandbox",
            kind="deposit",
            transfer_id=None,
            deposit_id=f"dep_{seq}",
            created_at=T0 + timedelta(seconds=seq),
            seq=seq,
            **NO_TRANSFER,
        )
        e.hash = chain.link(previous, text_of(e, legs, "v1" if seq <= v1 else "v2"))
        previous = e.hash
        out.append((e, legs))
    return out


def text_of(e: SimpleNamespace, legs: Legs, version: str = "v2") -> str:
    fields = (e.id, e.tenant_id, e.mode, e.kind, e.transfer_id, e.deposit_id, e.created_at)
    if version == "v1":
        return chain.canonical(*fields, [(a, x) for a, _, x in legs])
    terms = None
    if e.transfer_id:
        terms = chain.transfer_text({name: getattr(e, f"t_{name}") for name in chain.TRANSFER_FIELDS})
    return chain.canonical_v2(*fields, legs, terms)


class FakeJournal:
    """Chains and their heads as the repository would return them, and every read asked."""

    def __init__(self, **chains: int) -> None:
        self.rows = {t: entries(t, n) for t, n in chains.items()}
        self.heads = {
            t: SimpleNamespace(
                tenant_id=t, mode="sandbox", seq=n, head_hash=rows[-1][0].hash if rows else None
            )
            for t, (n, rows) in ((t, (n, self.rows[t])) for t, n in chains.items())
        }
        self.asked: list[tuple[Any, ...]] = []

    async def chain_heads(self, session: Any, tenant_id: str | None, mode: str | None) -> list[Any]:
        assert session is SESSION
        self.asked.append(("heads", tenant_id, mode))
        return [h for t, h in sorted(self.heads.items()) if tenant_id in (None, t)]

    async def headless_chains(self, session: Any, tenant_id: str | None, mode: str | None) -> list[Any]:
        assert session is SESSION
        return [(t, "sandbox") for t, rows in sorted(self.rows.items()) if rows and t not in self.heads]

    async def chain_page(self, session: Any, tenant_id: str, mode: str, after: int, limit: int) -> list[Any]:
        assert session is SESSION and mode == "sandbox"
        self.asked.append(("page", tenant_id, after, limit))
        return [r for r in self.rows[tenant_id] if r[0].seq > after][:limit]


@pytest.fixture
def journal(monkeypatch: pytest.MonkeyPatch) -> FakeJournal:
    fake = FakeJournal(ten_a=5, ten_b=3)
    monkeypatch.setattr(verification.repo, "chain_heads", fake.chain_heads)
    monkeypatch.setattr(verification.repo, "chain_page", fake.chain_page)
    monkeypatch.setattr(verification.repo, "headless_chains", fake.headless_chains)
    return fake


async def verify(tenant: str | None = None, mode: str | None = None) -> dict[str, Any]:
    cmd = VerifyJournal(
        command_id="cmd_1",
        ctx=Ctx(request_id="r", tenant_id="", mode="sandbox"),
        target_tenant_id=tenant,
        mode=mode,
    )
    effects = await verification.verify_journal(SESSION, cmd, LedgerConfig())  # type: ignore[arg-type]
    assert effects.status == 200 and effects.events == []
    return dict(effects.data)


async def test_intact_chains_verify_every_entry(journal: FakeJournal) -> None:
    assert await verify() == {"ok": True, "entries": 8, "head_hash": journal.heads["ten_b"].head_hash}
    assert journal.asked[0] == ("heads", None, None)
    assert await verify("ten_a", "sandbox") == {
        "ok": True,
        "entries": 5,
        "head_hash": journal.heads["ten_a"].head_hash,
    }
    assert journal.asked[-2:] == [("heads", "ten_a", "sandbox"), ("page", "ten_a", 0, verification.PAGE)]


async def test_no_chain_is_ok_with_nothing_checked(journal: FakeJournal) -> None:
    assert await verify("ten_nobody") == {"ok": True, "entries": 0, "head_hash": chain.GENESIS}


async def test_a_chain_is_read_page_after_page(journal: FakeJournal, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verification, "PAGE", 2)
    assert (await verify("ten_a"))["entries"] == 5
    assert [a[2:] for a in journal.asked if a[0] == "page"] == [(0, 2), (2, 2), (4, 2)]
    journal.asked.clear()
    monkeypatch.setattr(verification, "PAGE", 5)  # a full last page: one more read finds the end
    assert (await verify("ten_a"))["ok"] is True
    assert [a[2:] for a in journal.asked if a[0] == "page"] == [(0, 5), (5, 5)]


REASONS = {"its": "entry_mismatch", "entries": "entries_missing", "the": "head_mismatch"}


def bad(entry_id: str | None, head: SimpleNamespace, problem: str, entries: int) -> dict[str, Any]:
    """verify_journal's answer for a broken chain: ``entries`` checked before the bad one, the
    whole run's (earlier chains included)."""
    return {
        "ok": False,
        "entries": entries,
        "head_hash": head.head_hash,
        "first_bad_entry_id": entry_id,
        "problem": problem,
        "reason": REASONS[problem.split(" ")[0]],
        "tenant_id": head.tenant_id,
        "mode": "sandbox",
    }


async def test_a_changed_posting_names_its_entry(journal: FakeJournal) -> None:
    e, legs = journal.rows["ten_b"][1]
    journal.rows["ten_b"][1] = (e, [(legs[0][0], legs[0][1], legs[0][2] * 2), legs[1]])
    assert await verify() == bad(
        "je_ten_b_2", journal.heads["ten_b"], "its stored content or hash does not match its chain", 5 + 1
    )


@pytest.mark.parametrize(
    "field",
    ["id", "tenant_id", "mode", "kind", "transfer_id", "deposit_id", "created_at"],
)
async def test_every_field_of_an_entry_is_in_its_hash(journal: FakeJournal, field: str) -> None:
    e, _ = journal.rows["ten_a"][2]
    setattr(e, field, T0 if field == "created_at" else "tampered")
    found = await verify("ten_a")
    assert (found["ok"], found["first_bad_entry_id"], found["entries"]) == (False, e.id, 2)


async def test_a_rewritten_hash_names_its_entry(journal: FakeJournal) -> None:
    journal.rows["ten_a"][3][0].hash = "0" * 64
    found = await verify("ten_a")
    assert (found["first_bad_entry_id"], found["entries"]) == ("je_ten_a_4", 3)


async def test_a_deleted_entry_names_the_next_one_and_the_gap(journal: FakeJournal) -> None:
    del journal.rows["ten_a"][1:3]
    assert await verify("ten_a") == bad(
        "je_ten_a_4", journal.heads["ten_a"], "entries 2 to 3 of the chain are missing", 1
    )


async def test_a_truncated_tail_is_found_by_the_head(journal: FakeJournal) -> None:
    """The last entries deleted: every entry left links, only the head knows the chain was
    longer."""
    del journal.rows["ten_a"][3:]
    assert await verify("ten_a") == bad(
        None, journal.heads["ten_a"], "the chain's head names entry 5, the journal ends at 3", 3
    )


async def test_a_head_whose_hash_differs_from_its_last_entry_is_found(journal: FakeJournal) -> None:
    journal.heads["ten_b"].head_hash = "f" * 64
    assert await verify("ten_b") == bad(
        None, journal.heads["ten_b"], "the chain's head names entry 3, the journal ends at 3", 3
    )


async def test_an_empty_journal_under_a_head_is_a_truncated_chain(journal: FakeJournal) -> None:
    journal.rows["ten_b"] = []
    found = await verify("ten_b")
    assert (found["ok"], found["entries"], found["problem"]) == (
        False,
        0,
        "the chain's head names entry 3, the journal ends at 0",
    )


def test_the_canonical_text_is_in_utc_whatever_the_stamp_zone() -> None:
    east = timezone(timedelta(hours=5, minutes=30))
    stamp = datetime(2026, 1, 2, 8, 34, 5, 6, tzinfo=east)  # 03:04:05.000006 UTC
    text = chain.canonical("je_1", "ten", "live", "transfer_hold", "tr_1", None, stamp, [("a", D(0))])
    assert text == "v1|je_1|ten|live|transfer_hold|tr_1||2026-01-02T03:04:05.000006Z|a,credit,0.000000"
    assert chain.link("ab" * 32, text) == hashlib.sha256(("ab" * 32 + "\n" + text).encode()).hexdigest()
    assert chain.GENESIS == "0" * 64 and chain.VERSION == "v2"

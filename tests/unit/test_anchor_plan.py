"""ledger.anchors under mutation: which chains a turn anchors and which it
refuses, what it reads to decide (every page asked), when the oldest unanchored entry was
written, what is logged once, and a lost partition's finding. The journal is the fake of
test_journal_verification (its reads recorded); Kafka's side is in the integration tests
(tests/integration/test_journal_anchor_chain.py), and not mutated."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
import pytest
from aiokafka import TopicPartition

from common import authority
from common.contracts.anchors import JournalAnchor
from common.metrics import UNANCHORED
from common.settings import Settings
from ledger import anchors
from ledger.core import chain
from tests.unit import test_journal_verification
from tests.unit.test_journal_anchor_chain import FakeSession
from tests.unit.test_journal_anchors import KEY, SIGNING, Heads, anchor
from tests.unit.test_journal_verification import SESSION, T0, FakeJournal, entries

pytestmark = pytest.mark.unit
A = ("ten_a", "sandbox")


@pytest.fixture
def journal(monkeypatch: pytest.MonkeyPatch) -> FakeJournal:
    fake = FakeJournal(ten_a=5, ten_b=3)
    heads = Heads(fake)

    async def entry_hash_at(session: Any, tenant_id: str, mode: str, seq: int) -> str | None:
        assert session is test_journal_verification.SESSION and mode == "sandbox"
        fake.asked.append(("hash", tenant_id, seq))
        return await heads.entry_hash_at(session, tenant_id, mode, seq)

    monkeypatch.setattr(anchors.repo, "chain_heads", fake.chain_heads)
    monkeypatch.setattr(anchors.repo, "chain_page", fake.chain_page)
    monkeypatch.setattr(anchors.repo, "entry_hash_at", entry_hash_at)
    return fake


def found(*published: JournalAnchor) -> anchors.Found:
    out = anchors.Found()
    for n, a in enumerate(published):
        out.take(a, {"offset": n})
    return out


def at(journal: FakeJournal, tenant: str, seq: int) -> JournalAnchor:
    """An anchor of ``tenant``'s entry ``seq`` as the journal holds it (GENESIS at 0)."""
    head_hash = chain.GENESIS if seq == 0 else journal.rows[tenant][seq - 1][0].hash
    return anchor(tenant, seq, head_hash)


async def extends(journal: FakeJournal, a: JournalAnchor | None, tenant: str = "ten_a") -> Any:
    journal.asked.clear()
    return await anchors._extends(SESSION, journal.heads[tenant], a)  # type: ignore[arg-type]


async def test_a_chain_never_anchored_waits_since_its_first_entry(journal: FakeJournal) -> None:
    assert await extends(journal, None) == (True, T0 + timedelta(seconds=1))
    assert journal.asked == [("page", "ten_a", 0, 1)]
    journal.rows["ten_a"] = []  # a head with no entry read (yet)
    assert await extends(journal, None) == (True, None)


async def test_an_anchored_chain_is_walked_from_the_anchor_to_the_head(journal: FakeJournal) -> None:
    assert await extends(journal, at(journal, "ten_a", 2)) == (True, T0 + timedelta(seconds=3))
    assert journal.asked == [
        ("page", "ten_a", 2, 1),
        ("hash", "ten_a", 2),
        ("page", "ten_a", 2, anchors.PAGE),
    ]
    # from the genesis: no stored hash to read; from entry 1: its stored hash
    assert await extends(journal, at(journal, "ten_a", 0)) == (True, T0 + timedelta(seconds=1))
    assert ("hash", "ten_a", 0) not in journal.asked
    assert (await extends(journal, at(journal, "ten_a", 1)))[0] is True
    assert ("hash", "ten_a", 1) in journal.asked


async def test_the_walk_reads_page_after_page(journal: FakeJournal, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(anchors, "PAGE", 2)
    assert (await extends(journal, at(journal, "ten_a", 0)))[0] is True
    assert [a[2:] for a in journal.asked if a[0] == "page"] == [(0, 1), (0, 2), (2, 2), (4, 2)]
    # a last page that is full: the walk is at the head, and stops without another read
    assert (await extends(journal, at(journal, "ten_a", 1)))[0] is True
    assert [a[2:] for a in journal.asked if a[0] == "page"] == [(1, 1), (1, 2), (3, 2)]


async def test_entries_written_after_the_head_was_read_are_the_next_turns(journal: FakeJournal) -> None:
    journal.rows["ten_a"] = entries("ten_a", 7)
    assert journal.heads["ten_a"].seq == 5
    assert await extends(journal, at(journal, "ten_a", 3)) == (True, T0 + timedelta(seconds=4))


async def test_entries_hashed_as_version_1_still_extend_an_anchor(journal: FakeJournal) -> None:
    journal.rows["ten_a"] = entries("ten_a", 5, v1=4)  # version 1: written before transfer terms were hashed
    journal.heads["ten_a"].head_hash = journal.rows["ten_a"][-1][0].hash
    assert (await extends(journal, at(journal, "ten_a", 1)))[0] is True


async def test_a_head_that_did_not_move_forward_extends_nothing(journal: FakeJournal) -> None:
    a5 = at(journal, "ten_a", 5)
    journal.heads["ten_a"].head_hash = "ff" * 32  # changed in place, entries after it written since
    journal.rows["ten_a"] = entries("ten_a", 6)
    assert await extends(journal, a5) == (False, None)
    assert journal.asked == []  # refused before any read
    journal.heads["ten_a"].seq = 4
    assert await extends(journal, a5) == (False, None)


async def test_a_truncated_or_rewritten_chain_does_not_extend_its_anchor(journal: FakeJournal) -> None:
    a3 = at(journal, "ten_a", 3)
    journal.rows["ten_a"] = journal.rows["ten_a"][:3]  # entries 4 and 5 deleted, head kept
    assert await extends(journal, a3) == (False, None)
    journal.rows["ten_a"] = entries("ten_a", 5)
    journal.rows["ten_a"][3][0].hash = "00" * 32  # entry 4 no longer links
    assert await extends(journal, a3) == (False, T0 + timedelta(seconds=4))


def log_line(tenant: str, head: int, seq: int) -> str:
    return (
        f"journal chain {tenant}/sandbox (head entry {head}) no longer extends its anchor at entry {seq}"
        " (2026-01-02T03:04:05Z): not anchored; run verify_journal"
    )


async def test_a_refused_chain_is_logged_once_and_the_next_chain_still_anchored(
    journal: FakeJournal, caplog: pytest.LogCaptureFixture
) -> None:
    a3 = at(journal, "ten_a", 3)
    journal.rows["ten_a"][3][0].hash = "00" * 32
    seen = found(a3)
    refused: set[Any] = set()
    with caplog.at_level(logging.CRITICAL, logger=anchors.log.name):
        plan = await anchors.plan_anchors(SESSION, KEY, seen, refused)  # type: ignore[arg-type]
        assert [r.getMessage() for r in caplog.records] == [log_line("ten_a", 5, 3)]
        assert refused == {(A, a3.digest())}
        assert plan.refused == [A] and [(a.tenant_id, a.seq) for a in plan.anchors] == [("ten_b", 3)]
        assert plan.waiting_since == {
            A: T0 + timedelta(seconds=4),
            ("ten_b", "sandbox"): T0 + timedelta(seconds=1),
        }
        again = await anchors.anchor_moved(SESSION, _drop, KEY, seen, refused)  # type: ignore[arg-type]
        assert again == 1 and len(caplog.records) == 1  # logged once per chain and anchor


async def _drop(key: bytes, value: bytes) -> None:
    return None


@pytest.fixture(params=["XST-5:30", "YST+7"])
def zone(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("TZ", request.param)
    time.tzset()
    yield request.param
    monkeypatch.undo()
    time.tzset()


async def test_an_anchor_is_stamped_in_utc_in_any_zone(journal: FakeJournal, zone: str) -> None:
    plan = await anchors.plan_anchors(SESSION, KEY, anchors.Found())  # type: ignore[arg-type]
    stamp = datetime.fromisoformat(plan.anchors[0].anchored_at.replace("Z", "+00:00"))
    assert abs(stamp.timestamp() - time.time()) < 60, (zone, plan.anchors[0].anchored_at)


def test_the_unanchored_age_is_every_waiting_chains_until_published_then_the_refused_ones() -> None:
    now = T0 + timedelta(seconds=100)
    plan = anchors.Plan(refused=[A], waiting_since={A: T0 + timedelta(seconds=90), ("b", "live"): T0})
    assert plan.unanchored_s(now, published=False) == 100.0
    assert plan.unanchored_s(now, published=True) == 10.0
    assert anchors.Plan().unanchored_s(now, published=False) == 0.0


async def test_the_publishers_own_anchor_is_named_own_where_it_breaks_the_stream() -> None:
    seen = found(anchor("ten_a", 3, "01" * 32))
    liar = KEY.sign(msgspec.structs.replace(anchor("ten_a", 3, "02" * 32), prev=""))
    sent: list[bytes] = []

    async def publish(key: bytes, value: bytes) -> None:
        sent.append(key)

    await anchors.publish_anchors(anchors.Plan(anchors=[liar]), publish, seen)
    assert sent == [b"ten_a:sandbox"]
    assert seen.broken == [{"own": True, "why": "fork"}]


def test_a_partition_that_lost_its_start_or_started_over_is_a_finding(
    caplog: pytest.LogCaptureFixture,
) -> None:
    tp = TopicPartition("t.journal.anchors", 2)
    seen = anchors.Found()
    with caplog.at_level(logging.CRITICAL, logger=anchors.log.name):
        anchors._check_offsets(seen, tp, 0, 10, None)
        anchors._check_offsets(seen, tp, 0, 10, 10)  # read to its end: nothing lost
        assert seen.lost == [] and caplog.records == []
        anchors._check_offsets(seen, tp, 1, 10, None)
        anchors._check_offsets(seen, tp, 1, 10, None)  # the same finding once
        anchors._check_offsets(seen, tp, 0, 9, 10)
        anchors._check_offsets(seen, tp, 3, 2, 10)  # both: the deleted start is named
    assert seen.lost == [
        "partition 2 of t.journal.anchors starts at offset 1: records were deleted",
        "partition 2 of t.journal.anchors ends at 9, before offset 10: started over",
        "partition 2 of t.journal.anchors starts at offset 3: records were deleted",
    ]
    assert [r.getMessage() for r in caplog.records] == [f"journal anchors: {why}" for why in seen.lost]


def instance(publish: Any, key: str = SIGNING) -> anchors.Anchors:
    settings = Settings(
        env="development",
        journal_anchor_key=key,
        journal_anchor_verify_keys=authority.public_settings_of(SIGNING),
    )  # type: ignore[arg-type]
    return anchors.Anchors(settings, FakeSession(), "t.journal.anchors", publish)  # type: ignore[arg-type]


async def test_a_turn_publishes_to_the_topic_by_chain_and_counts(
    journal: FakeJournal, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    sent: list[tuple[bytes, str, bytes]] = []

    async def publish(value: bytes, *, topic: str, key: bytes) -> None:
        sent.append((value, topic, key))

    turn = instance(publish)
    monkeypatch.setattr(test_journal_verification, "SESSION", turn.sessions)  # what the fakes expect
    assert (turn.read_timeout_s, turn.positions, turn._logged, turn.published) == (30.0, {}, set(), 0)

    async def nothing() -> None:
        return None

    monkeypatch.setattr(turn, "catch_up", nothing)
    assert await turn.publish_once() == 2 and turn.published == 2
    assert [(t, k) for _, t, k in sent] == [
        ("t.journal.anchors", b"ten_a:sandbox"),
        ("t.journal.anchors", b"ten_b:sandbox"),
    ]
    journal.rows["ten_a"] = entries("ten_a", 7)
    journal.heads["ten_a"].seq, journal.heads["ten_a"].head_hash = 7, journal.rows["ten_a"][-1][0].hash
    journal.rows["ten_b"] = entries("ten_b", 4)
    journal.rows["ten_b"][3][0].created_at = datetime.now(UTC) - timedelta(seconds=1000)
    journal.rows["ten_b"][2][0].hash = "00" * 32  # entry 3, anchored, rewritten: refused
    journal.heads["ten_b"].seq = 4
    UNANCHORED.set(-1)
    with caplog.at_level(logging.CRITICAL, logger=anchors.log.name):
        assert await turn.publish_once() == 1 and turn.published == 3
        assert await turn.publish_once() == 0 and turn.published == 3
    assert len(caplog.records) == 1 and turn.refused == {("ten_b", "sandbox")}
    assert 999 < UNANCHORED._value.get() < 1100  # the refused chain's waiting entry, after publishing

    async def down() -> None:
        raise OSError("the broker is down")

    monkeypatch.setattr(turn, "catch_up", down)
    journal.rows["ten_a"] = entries("ten_a", 8)
    journal.heads["ten_a"].seq, journal.heads["ten_a"].head_hash = 8, journal.rows["ten_a"][-1][0].hash
    with pytest.raises(OSError, match="the broker is down"):
        await turn.publish_once()
    # measured before publishing: every chain waiting, ten_a's new entry (written at T0, long
    # ago) the oldest, not only the refused ten_b's (1000 s)
    assert UNANCHORED._value.get() > 10**6 and turn.published == 3


async def test_a_ledger_without_the_key_does_not_anchor() -> None:
    with pytest.raises(RuntimeError) as info:
        await instance(None, key="").publish_once()
    assert str(info.value) == "SLUICE_JOURNAL_ANCHOR_KEY is not set: this instance does not anchor"

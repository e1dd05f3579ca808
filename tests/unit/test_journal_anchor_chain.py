"""The anchored journal round 2 (docs/security.md, "Journal anchors"), as pure logic (the same
on the real stack: tests/integration/test_journal_anchor_chain.py). Each claim read from round
1's code has a test here that failed on it:

- the anchor key had no id and could not rotate: ``test_the_anchor_key_has_an_id_and_rotates``;
- HMAC: the verifier held the signing key: ``test_verification_needs_only_the_public_keys``;
- two ledgers: a rewrite past one instance's last anchor was anchored by it once the other had
  anchored further: ``test_an_instance_extends_the_newest_anchor_whoever_signed_it`` and
  ``test_every_anchor_is_compared_so_a_stale_instances_anchor_cannot_hide_a_rewrite``;
- a lost anchors topic answered ok: ``test_a_lost_or_empty_anchor_stream_is_a_finding``;
plus the anchor stream as a chain (gap, rewrite, fork), the unanchored gauge and its alert."""

from __future__ import annotations

from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import msgspec
import pytest
import yaml

from common import authority
from common.contracts.anchors import ANCHORS, JournalAnchor
from common.metrics import ANCHOR_REFUSED, UNANCHORED
from common.settings import Settings
from ledger import anchors
from ledger.anchor_stream import AnchorKey, AnchorVerifyKeys
from tests.unit import test_journal_verification
from tests.unit.test_journal_anchors import (
    KEY,
    KEYS,
    SIGNING,
    Heads,
    anchor,
    anchors_of,
    chained,
    found_of,
    heads,  # noqa: F401 - a fixture
    journal,  # noqa: F401 - a fixture
    rewrite,
    verify,
)
from tests.unit.test_journal_verification import SESSION, T0, FakeJournal, entries

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[2]


def wire(published: list[JournalAnchor]) -> list[tuple[int, int, bytes]]:
    return [(0, n, msgspec.json.encode(a)) for n, a in enumerate(published)]


# ---- keys: an id, a rotation, public keys only ----


def test_the_anchor_key_has_an_id_and_rotates() -> None:
    new_setting = authority.new_seed_setting("anchor-2026b")
    new = AnchorKey.parse(new_setting)
    first = anchor(seq=2)  # signed with the old key, anchor-2026a
    second = new.sign(msgspec.structs.replace(anchor(seq=4), prev=first.digest()))
    stream = [first, second]
    assert [a.kid for a in stream] == ["anchor-2026a", "anchor-2026b"]
    both = AnchorVerifyKeys.parse(
        f"{authority.public_settings_of(SIGNING)},{authority.public_settings_of(new_setting)}"
    )
    during = anchors.newest_anchors(wire(stream), both)
    assert (during.untrusted, during.broken, during.newest[("ten_a", "sandbox")]) == ([], [], second)
    after = anchors.newest_anchors(
        wire(stream), AnchorVerifyKeys.parse(authority.public_settings_of(new_setting))
    )
    assert [u["why"] for u in after.untrusted] == ["bad signature"]  # the old key dropped
    with pytest.raises(authority.AuthorityError, match="appears twice"):
        AnchorVerifyKeys.parse(
            f"{authority.public_settings_of(SIGNING)},{authority.public_settings_of(SIGNING)}"
        )


def test_verification_needs_only_the_public_keys() -> None:
    """The verify keys are public (a str setting, not a secret); from them no anchor can be
    made that verifies: they are not the signing key (round 1: one HMAC key did both)."""
    public = authority.public_settings_of(SIGNING)
    settings = Settings(env="development", journal_anchor_key="", journal_anchor_verify_keys=public)  # type: ignore[arg-type]
    reader = anchors.Anchors(settings, None, "t.journal.anchors", None)  # type: ignore[arg-type]
    assert reader.key is None and set(reader.keys.keys) == {"anchor-2026a"}
    assert Settings.model_fields["journal_anchor_verify_keys"].annotation is str  # not a SecretStr
    assert SIGNING.partition(":")[2] not in public
    from ledger import app

    runtime = SimpleNamespace(
        sessions=None, topics=SimpleNamespace(journal_anchors="t.journal.anchors"), broker=None
    )
    verifier = app._anchors(settings, runtime)  # type: ignore[arg-type]  # a ledger given the public keys only
    assert verifier is not None and verifier.key is None and verifier.keys.keys.keys() == {"anchor-2026a"}
    as_seed = AnchorKey.parse(public)  # the public key's bytes used as a seed: another key
    assert not reader.keys.verifies(anchor(key=as_seed))
    assert reader.keys.verifies(anchor())


# ---- the anchor stream is a chain ----


def test_a_gap_a_rewritten_anchor_and_a_disagreeing_fork_break_the_stream() -> None:
    a1, a2, a3 = chained(
        anchor(seq=1, head_hash="01" * 32),
        anchor(seq=2, head_hash="02" * 32),
        anchor(seq=3, head_hash="03" * 32),
    )
    assert anchors.newest_anchors(wire([a1, a2, a3]), KEYS).broken == []
    gap = anchors.newest_anchors(wire([a1, a3]), KEYS)  # a2 taken out of the stream
    assert [(b["offset"], b["seq"], b["why"]) for b in gap.broken] == [(1, 3, "gap")]
    back = KEY.sign(msgspec.structs.replace(a1, seq=1, head_hash="ee" * 32, prev=a2.digest()))
    assert [b["why"] for b in anchors.newest_anchors(wire([a1, a2, back]), KEYS).broken] == ["rewritten"]
    liar = KEY.sign(msgspec.structs.replace(a2, head_hash="dd" * 32))  # extends a1, as a2 does
    found = anchors.newest_anchors(wire([a1, a2, liar]), KEYS)
    assert [b["why"] for b in found.broken] == ["fork"]
    honest = KEY.sign(msgspec.structs.replace(a3, prev=a1.digest()))  # two instances at once
    found = anchors.newest_anchors(wire([a1, a2, honest]), KEYS)
    assert found.broken == [] and found.chains[("ten_a", "sandbox")].forks == 1
    assert found.newest[("ten_a", "sandbox")] == honest
    again = anchors.newest_anchors(wire([a1, a2, a2]), KEYS)  # a record read twice
    assert again.broken == [] and again.chains[("ten_a", "sandbox")].forks == 0
    again.compact()  # a publisher keeps the newest anchor of each chain only, and extends it
    assert list(again.chains[("ten_a", "sandbox")].known) == [a2.digest()]
    again.take(a3, {})
    assert again.newest[("ten_a", "sandbox")] == a3 and again.broken == []


async def test_a_broken_stream_is_a_finding_of_verify_journal(journal: FakeJournal) -> None:  # noqa: F811
    first = [anchor("ten_a", 3, journal.rows["ten_a"][2][0].hash), *anchors_of(journal)]
    stream = [*chained(first[0], first[1]), first[2]]
    assert (await verify(journal, stream))["ok"] is True
    found = await verify(journal, [stream[1], stream[2]])  # ten_a's first anchor taken out
    assert (found["ok"], found["reason"], found["broken_anchor_count"]) == (False, "anchor_chain_broken", 1)
    assert found["broken_anchors"][0]["why"] == "gap"
    assert (await verify(journal, [stream[1], stream[2]], "ten_b"))["ok"] is True


# ---- two ledger instances ----


async def test_an_instance_extends_the_newest_anchor_whoever_signed_it(
    journal: FakeJournal,  # noqa: F811
    heads: Heads,  # noqa: F811
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A anchors ten_a at entry 3; B, at entry 5; entries 4 and 5 are rewritten (hashes and head
    recomputed) and the ledger appends entry 6. Round 1's A checked its own anchor (entry 3,
    intact) and anchored entry 6. Now A reads B's anchor first and refuses."""
    topic: list[JournalAnchor] = []

    async def to_topic(key: bytes, value: bytes) -> None:
        topic.append(ANCHORS.decode(value))

    full = journal.rows["ten_a"]
    journal.rows["ten_a"] = full[:3]
    journal.heads["ten_a"].seq, journal.heads["ten_a"].head_hash = 3, full[2][0].hash
    a_found, b_found = anchors.Found(), anchors.Found()
    await anchors.anchor_moved(SESSION, to_topic, KEY, a_found)  # type: ignore[arg-type]
    for n, a in enumerate(topic):
        b_found.take(a, {"offset": n})  # B reads the topic
    journal.rows["ten_a"] = full
    journal.heads["ten_a"].seq, journal.heads["ten_a"].head_hash = 5, full[4][0].hash
    assert await anchors.anchor_moved(SESSION, to_topic, KEY, b_found) == 1  # type: ignore[arg-type]
    assert topic[-1].seq == 5 and topic[-1].prev == topic[0].digest()
    rewrite(journal, "ten_a", at=4, extra=1)
    stale = await anchors.plan_anchors(SESSION, KEY, a_found)  # type: ignore[arg-type]
    assert [a.seq for a in stale.anchors] == [6]  # round 1: A, stale, would anchor the rewrite
    for n, a in enumerate(topic):
        a_found.take(a, {"offset": n})  # A reads the topic before its turn
    before = ANCHOR_REFUSED._value.get()
    with caplog.at_level("CRITICAL", logger=anchors.log.name):
        assert await anchors.anchor_moved(SESSION, to_topic, KEY, a_found) == 0  # type: ignore[arg-type]
    assert ANCHOR_REFUSED._value.get() == before + 1
    assert "no longer extends its anchor at entry 5" in caplog.text
    found = await verify(journal, topic)
    assert (found["ok"], found["reason"], found["anchor"]["seq"]) == (False, "anchor_mismatch", 5)


async def test_every_anchor_is_compared_so_a_stale_instances_anchor_cannot_hide_a_rewrite(
    journal: FakeJournal,  # noqa: F811
) -> None:
    """Even if the stale instance anchored the rewrite (it read the topic just before B's anchor
    landed), verify_journal compares B's anchor too: round 1 compared only the newest."""
    at3 = anchor("ten_a", 3, journal.rows["ten_a"][2][0].hash)
    b5 = anchor("ten_a", 5, journal.rows["ten_a"][4][0].hash, prev=at3.digest())
    rewrite(journal, "ten_a", at=4, extra=1)
    a6 = anchor("ten_a", 6, journal.heads["ten_a"].head_hash, prev=at3.digest())  # a fork
    found = await verify(journal, [at3, b5, a6, anchors_of(journal)[1]])
    assert (found["ok"], found["reason"], found["first_bad_entry_id"]) == (
        False,
        "anchor_mismatch",
        "je_ten_a_5",
    )
    assert found["anchor"]["seq"] == 5


# ---- a lost anchors topic ----


async def test_a_lost_or_empty_anchor_stream_is_a_finding(journal: FakeJournal) -> None:  # noqa: F811
    lost = found_of(anchors_of(journal))
    lost.lost.append("the topic t.journal.anchors does not exist")
    found = await verify(journal, [], found=lost)
    assert (found["ok"], found["reason"], found["anchors_lost"]) == (
        False,
        "anchors_missing",
        ["the topic t.journal.anchors does not exist"],
    )
    found = await verify(journal, [])  # chains written long ago, no anchor at all: a reset topic
    assert (found["ok"], found["reason"], found["unanchored_chain_count"]) == (False, "anchors_missing", 2)
    assert found["unanchored_chains"][0] == {
        "tenant_id": "ten_a",
        "mode": "sandbox",
        "since": "2026-01-02T03:04:06.000006Z",
    }
    found = await verify(journal, anchors_of(journal)[:1])
    assert [c["tenant_id"] for c in found["unanchored_chains"]] == ["ten_b"]
    young = (datetime.now(UTC) - T0).total_seconds() + 60  # ten_b written within the grace
    assert (await verify(journal, anchors_of(journal)[:1], grace_s=young))["ok"] is True


# ---- the unanchored gauge and its alert ----


class FakeSession:
    """A session whose transaction does nothing, and the sessionmaker that gives it."""

    @asynccontextmanager
    async def _nothing(self) -> Any:
        yield self

    def __call__(self) -> Any:
        return self._nothing()

    def begin(self) -> Any:
        return self._nothing()


async def test_the_unanchored_gauge_is_zero_when_all_is_anchored_or_idle_and_ages_when_refused(
    journal: FakeJournal,  # noqa: F811
    heads: Heads,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    session = FakeSession()
    monkeypatch.setattr(test_journal_verification, "SESSION", session)  # what the fakes expect
    settings = Settings(
        env="development",
        journal_anchor_key=SIGNING,
        journal_anchor_verify_keys=authority.public_settings_of(SIGNING),
    )  # type: ignore[arg-type]

    async def publish(value: bytes, *, topic: str, key: bytes) -> None:
        await heads.publish(key, value)

    instance = anchors.Anchors(settings, session, "t.journal.anchors", publish)  # type: ignore[arg-type]

    async def no_topic() -> None:
        return None

    monkeypatch.setattr(instance, "catch_up", no_topic)
    now = datetime.now(UTC)
    for rows in journal.rows.values():
        for e, _ in rows:
            e.created_at = now - timedelta(seconds=100)
    assert await instance.publish_once() == 2 and UNANCHORED._value.get() == 0  # all anchored
    assert await instance.publish_once() == 0 and UNANCHORED._value.get() == 0  # idle: no alarm
    journal.rows["ten_b"] = entries("ten_b", 4)
    journal.rows["ten_b"][3][0].created_at = now - timedelta(seconds=40)
    rewrite(journal, "ten_b", at=1)  # the whole chain rewritten: refused
    journal.heads["ten_b"].seq = 4
    assert await instance.publish_once() == 0
    assert 39 < UNANCHORED._value.get() < 100, UNANCHORED._value.get()  # entry 4's age
    assert instance.refused == {("ten_b", "sandbox")}

    async def kafka_down() -> None:
        raise TimeoutError("t.journal.anchors: not read to its end in 30 s")

    monkeypatch.setattr(instance, "catch_up", kafka_down)
    UNANCHORED.set(0)
    journal.rows["ten_a"] = entries("ten_a", 6)  # ten_a moved: it cannot be anchored unread
    journal.heads["ten_a"].seq, journal.heads["ten_a"].head_hash = 6, journal.rows["ten_a"][-1][0].hash
    sent = len(heads.sent)
    with pytest.raises(TimeoutError):
        await instance.publish_once()
    assert len(heads.sent) == sent and UNANCHORED._value.get() > 39  # still measured, nothing signed


def test_the_alert_fires_on_the_unanchored_gauge_past_three_intervals() -> None:
    rules = yaml.safe_load((ROOT / "deploy" / "prometheus" / "alerts.yml").read_text())
    [rule] = [r for g in rules["groups"] for r in g["rules"] if r.get("alert") == "SluiceJournalUnanchored"]
    assert "sluice_journal_unanchored_seconds" in rule["expr"]
    assert "3 * max(sluice_journal_anchor_interval_seconds)" in rule["expr"] and rule["for"] == "1m"
    scrape = yaml.safe_load((ROOT / "deploy" / "prometheus.yml").read_text())
    assert "prometheus/alerts.yml" in scrape["rule_files"]


def test_make_run_bench_chaos_and_the_tests_give_a_matching_key_pair() -> None:
    from tests.conftest import ANCHOR_KEYS
    from tools.stack.suite import ephemeral_secrets

    for env in (ephemeral_secrets("t1"), ANCHOR_KEYS, authority.new_anchor_settings("x")):
        key = AnchorKey.parse(env["SLUICE_JOURNAL_ANCHOR_KEY"])
        assert env["SLUICE_JOURNAL_ANCHOR_VERIFY_KEYS"] == key.public_entry()
        given = Settings(
            env="production",
            journal_anchor_key=env["SLUICE_JOURNAL_ANCHOR_KEY"],  # type: ignore[arg-type]
            journal_anchor_verify_keys=env["SLUICE_JOURNAL_ANCHOR_VERIFY_KEYS"],
        )
        assert not [w for w in given.weak_secrets() if "ANCHOR" in w]

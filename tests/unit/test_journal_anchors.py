"""The anchored journal (docs/security.md, "Journal anchors"): canonical version 2 (currency and
the transfer's terms in the hash), anchors signed with Ed25519 under a key id and chained
(``prev``), the publisher that anchors only chains that moved and still extend the newest anchor
on the topic (whoever signed it), and verify_journal against every anchor (``anchor_mismatch``,
``truncated_tail``, ``missing_head``, ``anchors_missing``, ``anchor_chain_broken``, an untrusted
record). The same tampering by SQL on the services: tests/inprocess/test_journal_anchors.py and
tests/integration/test_journal_anchor_chain.py."""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from decimal import Decimal
from types import SimpleNamespace
from typing import Any

import msgspec
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from common import authority
from common.contracts.anchors import ANCHORS, JournalAnchor
from common.contracts.base import Ctx
from common.contracts.commands import VerifyJournal
from common.errors import ServiceError
from common.metrics import ANCHOR_REFUSED
from common.settings import Settings
from ledger import anchors, verification
from ledger.anchor_stream import AnchorKey, AnchorVerifyKeys
from ledger.config import LedgerConfig
from ledger.core import chain
from tests.unit.test_journal_verification import SESSION, FakeJournal, entries, text_of

pytestmark = pytest.mark.unit
D = Decimal
SIGNING = authority.new_seed_setting("anchor-2026a")
KEY = AnchorKey.parse(SIGNING)
KEYS = AnchorVerifyKeys.parse(authority.public_settings_of(SIGNING))  # public keys only
T0 = datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC)
TRANSFER = {
    "kind": "transfer",
    "route": "external",
    "currency": "USDC",
    "amount": D("12.5"),
    "fee_amount": D("0.25"),
    "source_wallet_id": "w_src",
    "destination_wallet_id": None,
    "destination": {"payment_rail": "ethereum", "currency": "USDC", "address": "0xabc", "chain": "ETH"},
}


def test_canonical_v2_is_the_documented_text() -> None:
    legs = [("b", "USDC", D(5)), ("a", "EURC", D("-5.5"))]
    text = chain.canonical_v2("je_1", "ten", "live", "transfer_hold", "tr_1", None, T0, legs, "TERMS")
    assert text == (
        "v2|je_1|ten|live|transfer_hold|tr_1||2026-01-02T03:04:05.000006Z"
        "|a,EURC,debit,5.500000;b,USDC,credit,5.000000|TERMS"
    )
    assert chain.transfer_text(TRANSFER) == (
        "transfer,external,USDC,12.500000,0.250000,w_src,,"
        '{"address":"0xabc","chain":"ETH","currency":"USDC","payment_rail":"ethereum"}'
    )
    no_transfer = chain.canonical_v2("je_2", "ten", "live", "deposit", None, "dep_1", T0, [], None)
    assert no_transfer == "v2|je_2|ten|live|deposit||dep_1|2026-01-02T03:04:05.000006Z||"


@pytest.mark.parametrize(
    "change",
    [
        {"destination": {**TRANSFER["destination"], "address": "0xdef"}},  # type: ignore[dict-item]
        {"destination_wallet_id": "w_other"},
        {"source_wallet_id": "w_other"},
        {"amount": D("125")},
        {"fee_amount": D("0")},
        {"currency": "USDT"},
        {"route": "book"},
        {"kind": "payout"},
    ],
)
def test_every_term_of_the_transfer_is_in_the_hash(change: dict[str, Any]) -> None:
    before = chain.transfer_text(TRANSFER)
    assert chain.transfer_text({**TRANSFER, **change}) != before


def test_a_postings_currency_is_in_v2_and_was_not_in_v1() -> None:
    usdc, eurc = [("a", "USDC", D(1)), ("b", "USDC", D(-1))], [("a", "EURC", D(1)), ("b", "EURC", D(-1))]
    args = ("je", "t", "sandbox", "deposit", None, "d", T0)
    assert chain.canonical_v2(*args, usdc, None) != chain.canonical_v2(*args, eurc, None)
    assert chain.canonical(*args, [(a, x) for a, _, x in usdc]) == chain.canonical(
        *args, [(a, x) for a, _, x in eurc]
    )


@pytest.fixture
def journal(monkeypatch: pytest.MonkeyPatch) -> FakeJournal:
    fake = FakeJournal(ten_a=5, ten_b=3)
    for name in ("chain_heads", "chain_page", "headless_chains"):
        monkeypatch.setattr(verification.repo, name, getattr(fake, name))
    return fake


# ---- anchors: signing ----


def anchor(
    tenant: str = "ten_a",
    seq: int = 3,
    head_hash: str = "ab" * 32,
    key: AnchorKey = KEY,
    mode: str = "sandbox",
    prev: str = "",
) -> JournalAnchor:
    made = JournalAnchor(
        tenant_id=tenant,
        mode=mode,
        seq=seq,
        head_hash=head_hash,
        anchored_at="2026-01-02T03:04:05Z",
        prev=prev,
    )
    return key.sign(made)


def chained(*made: JournalAnchor, key: AnchorKey = KEY) -> list[JournalAnchor]:
    """``made`` re-signed in order, each extending the one before (a chain's anchor stream)."""
    out: list[JournalAnchor] = []
    for a in made:
        out.append(key.sign(msgspec.structs.replace(a, prev=out[-1].digest() if out else "")))
    return out


def test_an_anchor_is_signed_with_ed25519_under_its_key_id_over_every_field() -> None:
    a = anchor(prev="cd" * 32)
    assert a.kid == "anchor-2026a" and a.prev == "cd" * 32
    text = (
        b"journal.anchor.v2|ten_a|sandbox|3|"
        + b"ab" * 32
        + b"|2026-01-02T03:04:05Z|"
        + b"cd" * 32
        + b"|anchor-2026a"
    )
    assert a.signed_text() == text
    public = KEYS.keys["anchor-2026a"]
    assert isinstance(public, Ed25519PublicKey)
    public.verify(base64.b64decode(a.signature), text)  # raises if it does not verify
    assert KEYS.verifies(a)
    for change in (
        {"tenant_id": "ten_b"},
        {"mode": "production"},
        {"seq": 4},
        {"head_hash": "cd" * 32},
        {"anchored_at": "x"},
        {"prev": ""},
        {"kid": "anchor-other"},
        {"signature": "not base64!"},
    ):
        assert not KEYS.verifies(msgspec.structs.replace(a, **change)), change
    other = AnchorKey.parse(authority.new_seed_setting("anchor-2026a"))  # same id, another key
    assert not KEYS.verifies(anchor(key=other))
    wire = msgspec.json.encode(a)
    assert msgspec.json.decode(wire)["type"] == "journal.anchor.v2" and ANCHORS.decode(wire) == a


def test_a_round_1_hmac_anchor_is_not_an_anchor_any_more() -> None:
    v1 = {"type": "journal.anchor.v1", "tenant_id": "ten_a", "mode": "sandbox", "seq": 1}
    found = anchors.newest_anchors([(0, 0, msgspec.json.encode({**v1, "signature": "ab" * 32}))], KEYS)
    assert (found.newest, found.untrusted) == ({}, [{"partition": 0, "offset": 0, "why": "not an anchor"}])


def test_the_newest_valid_anchor_of_each_chain_is_kept_and_the_rest_reported() -> None:
    forged = anchor(seq=9, key=AnchorKey.parse(authority.new_seed_setting("anchor-2026a")))
    records = [*chained(anchor(seq=2), anchor(seq=5, head_hash="11" * 32)), anchor("ten_b", 1), forged]
    wire = [(0, n, msgspec.json.encode(r)) for n, r in enumerate(records)] + [(1, 0, b"{not json")]
    found = anchors.newest_anchors(wire, KEYS)
    assert found.newest == {("ten_a", "sandbox"): records[1], ("ten_b", "sandbox"): records[2]}
    assert found.untrusted == [
        {
            "partition": 0,
            "offset": 3,
            "tenant_id": "ten_a",
            "mode": "sandbox",
            "seq": 9,
            "why": "bad signature",
        },
        {"partition": 1, "offset": 0, "why": "not an anchor"},
    ]
    assert found.broken == []


# ---- anchors: the publisher ----


class Heads:
    def __init__(self, journal: FakeJournal) -> None:
        self.journal = journal
        self.sent: list[tuple[bytes, JournalAnchor]] = []

    async def publish(self, key: bytes, value: bytes) -> None:
        self.sent.append((key, ANCHORS.decode(value)))

    async def entry_hash_at(self, session: Any, tenant_id: str, mode: str, seq: int) -> str | None:
        return next((e.hash for e, _ in self.journal.rows[tenant_id] if e.seq == seq), None)


@pytest.fixture
def heads(journal: FakeJournal, monkeypatch: pytest.MonkeyPatch) -> Heads:
    found = Heads(journal)
    monkeypatch.setattr(anchors.repo, "chain_heads", journal.chain_heads)
    monkeypatch.setattr(anchors.repo, "chain_page", journal.chain_page)
    monkeypatch.setattr(anchors.repo, "entry_hash_at", found.entry_hash_at)
    return found


async def test_only_chains_whose_head_moved_are_anchored_each_extending_the_last(
    journal: FakeJournal, heads: Heads
) -> None:
    found = anchors.Found()
    assert await anchors.anchor_moved(SESSION, heads.publish, KEY, found) == 2  # type: ignore[arg-type]
    assert [(k, a.tenant_id, a.seq, a.prev) for k, a in heads.sent] == [
        (b"ten_a:sandbox", "ten_a", 5, ""),
        (b"ten_b:sandbox", "ten_b", 3, ""),
    ]
    assert all(
        KEYS.verifies(a) and a.head_hash == journal.heads[a.tenant_id].head_hash for _, a in heads.sent
    )
    assert await anchors.anchor_moved(SESSION, heads.publish, KEY, found) == 0  # type: ignore[arg-type]
    journal.rows["ten_b"] = entries("ten_b", 4)  # one more entry: the same chain, extended
    journal.heads["ten_b"].seq, journal.heads["ten_b"].head_hash = 4, journal.rows["ten_b"][-1][0].hash
    assert await anchors.anchor_moved(SESSION, heads.publish, KEY, found) == 1  # type: ignore[arg-type]
    assert heads.sent[-1][1].seq == 4 and heads.sent[-1][1].prev == heads.sent[1][1].digest()
    assert found.broken == [] and found.newest[("ten_b", "sandbox")] == heads.sent[-1][1]


async def test_a_rewritten_chain_is_never_anchored(journal: FakeJournal, heads: Heads) -> None:
    found = anchors.Found()
    await anchors.anchor_moved(SESSION, heads.publish, KEY, found)  # type: ignore[arg-type]
    rewrite(journal, "ten_a", at=2, extra=1)  # rehashed end to end, head row moved to match
    assert await anchors.anchor_moved(SESSION, heads.publish, KEY, found) == 0  # type: ignore[arg-type]
    journal.heads["ten_b"].head_hash = "ff" * 32  # a head moved in place
    assert await anchors.anchor_moved(SESSION, heads.publish, KEY, found) == 0  # type: ignore[arg-type]
    assert found.newest[("ten_a", "sandbox")].seq == 5 and len(heads.sent) == 2


async def test_entries_after_the_anchor_must_link_up_to_the_head(journal: FakeJournal, heads: Heads) -> None:
    """The entry at the anchored seq intact, a later one changed without its hash: refused (a
    chain is anchored only if it extends its anchor entry by entry)."""
    found = anchors.Found()
    del journal.rows["ten_a"][3:]
    journal.heads["ten_a"].seq, journal.heads["ten_a"].head_hash = 3, journal.rows["ten_a"][-1][0].hash
    await anchors.anchor_moved(SESSION, heads.publish, KEY, found)  # type: ignore[arg-type]
    journal.rows["ten_a"] = entries("ten_a", 5)
    journal.heads["ten_a"].seq, journal.heads["ten_a"].head_hash = 5, journal.rows["ten_a"][-1][0].hash
    e, legs = journal.rows["ten_a"][3]
    journal.rows["ten_a"][3] = (
        e,
        [(legs[0][0], legs[0][1], legs[0][2] * 2), (legs[1][0], legs[1][1], legs[1][2] * 2)],
    )
    before = ANCHOR_REFUSED._value.get()
    assert await anchors.anchor_moved(SESSION, heads.publish, KEY, found) == 0  # type: ignore[arg-type]
    assert ANCHOR_REFUSED._value.get() == before + 1
    journal.rows["ten_a"][3] = (e, legs)  # put back: anchored
    assert await anchors.anchor_moved(SESSION, heads.publish, KEY, found) == 1  # type: ignore[arg-type]


# ---- verify_journal against the anchors ----


def rewrite(journal: FakeJournal, tenant: str, at: int, extra: int = 0) -> None:
    """Double the amount of entry ``at`` and recompute every hash from there on, head row
    included: the chain verifies against itself. ``extra`` entries are appended."""
    rows = journal.rows[tenant]
    e, legs = rows[at - 1]
    rows[at - 1] = (e, [(legs[0][0], legs[0][1], legs[0][2] * 2), (legs[1][0], legs[1][1], legs[1][2] * 2)])
    for n in range(extra):
        template, tl = rows[-1]
        rows.append((SimpleNamespace(**{**vars(template), "id": f"je_x{n}", "seq": template.seq + 1}), tl))
    previous = rows[at - 2][0].hash if at > 1 else chain.GENESIS
    for e, legs in rows[at - 1 :]:
        e.hash = chain.link(previous, text_of(e, legs))
        previous = e.hash
    journal.heads[tenant].seq, journal.heads[tenant].head_hash = rows[-1][0].seq, previous


def found_of(published: list[JournalAnchor]) -> anchors.Found:
    return anchors.newest_anchors([(0, n, msgspec.json.encode(a)) for n, a in enumerate(published)], KEYS)


async def verify(
    journal: FakeJournal,
    published: list[JournalAnchor],
    tenant: str | None = None,
    mode: str | None = None,
    found: anchors.Found | None = None,
    grace_s: float = 15.0,
) -> dict[str, Any]:
    async def read() -> anchors.Found:
        return found if found is not None else found_of(published)

    cmd = VerifyJournal(
        command_id="c",
        ctx=Ctx(request_id="r", tenant_id="", mode="sandbox"),
        target_tenant_id=tenant,
        mode=mode,
    )
    effects = await verification.verify_journal(
        SESSION, cmd, LedgerConfig(read_anchors=read, anchor_grace_s=grace_s)
    )  # type: ignore[arg-type]
    assert effects.status == 200 and effects.events == []
    return dict(effects.data)


def anchors_of(journal: FakeJournal) -> list[JournalAnchor]:
    return [anchor(t, h.seq, h.head_hash) for t, h in sorted(journal.heads.items())]


async def test_intact_chains_agree_with_their_anchors(journal: FakeJournal) -> None:
    found = await verify(journal, anchors_of(journal))
    assert found == {"ok": True, "entries": 8, "head_hash": journal.heads["ten_b"].head_hash, "anchored": 2}


async def test_a_rewritten_middle_with_recomputed_hashes_is_an_anchor_mismatch(journal: FakeJournal) -> None:
    published = anchors_of(journal)
    rewrite(journal, "ten_a", at=2, extra=2)
    found = await verify(journal, published)
    assert (found["ok"], found["reason"], found["first_bad_entry_id"], found["tenant_id"]) == (
        False,
        "anchor_mismatch",
        "je_ten_a_5",
        "ten_a",
    )
    assert found["anchor"]["seq"] == 5 and found["anchor"]["head_hash"] == published[0].head_hash


async def test_a_truncated_tail_with_its_head_moved_back_is_found(journal: FakeJournal) -> None:
    published = anchors_of(journal)
    del journal.rows["ten_b"][1:]
    journal.heads["ten_b"].seq, journal.heads["ten_b"].head_hash = 1, journal.rows["ten_b"][0][0].hash
    found = await verify(journal, published, "ten_b")
    assert (found["ok"], found["reason"], found["first_bad_entry_id"], found["entries"]) == (
        False,
        "truncated_tail",
        None,
        1,
    )


async def test_a_restored_prefix_is_a_truncated_tail_its_anchors_vouch_for(journal: FakeJournal) -> None:
    """What a point-in-time restore leaves (docs/operations/backups.md): anchors of entries 2 and
    5, the chain back at entry 3. The answer names the newest anchor it still reaches; a chain
    both shortened and rewritten is reported as rewritten, never as a mere restore."""
    rows = journal.rows["ten_a"]
    stream = chained(anchor("ten_a", 2, rows[1][0].hash), anchor("ten_a", 5, rows[4][0].hash))
    del rows[3:]
    journal.heads["ten_a"].seq, journal.heads["ten_a"].head_hash = 3, rows[2][0].hash
    found = await verify(journal, stream, "ten_a")
    assert (found["ok"], found["reason"], found["entries"], found["anchor"]["seq"]) == (
        False,
        "truncated_tail",
        3,
        5,
    )
    assert found["anchored_through"] == {"seq": 2, "head_hash": rows[1][0].hash, "anchored_at": AT}
    rewrite(journal, "ten_a", at=2)
    found = await verify(journal, stream, "ten_a")
    assert (found["ok"], found["reason"], found["first_bad_entry_id"]) == (
        False,
        "anchor_mismatch",
        "je_ten_a_2",
    )


async def test_a_deleted_head_row_is_a_missing_head(journal: FakeJournal) -> None:
    published = anchors_of(journal)
    del journal.heads["ten_b"]
    found = await verify(journal, published)
    assert (found["ok"], found["reason"], found["tenant_id"], found["anchor"]["seq"]) == (
        False,
        "missing_head",
        "ten_b",
        3,
    )
    assert (await verify(journal, []))["reason"] == "missing_head"  # entries without a head, no anchor yet
    journal.rows["ten_b"] = []  # the chain's entries gone too: only the anchor remembers it
    assert (await verify(journal, published))["reason"] == "missing_head"
    assert (await verify(journal, published, "ten_a"))["ok"] is True  # narrowed to another tenant


async def test_a_record_that_is_not_a_valid_anchor_is_reported_not_trusted(journal: FakeJournal) -> None:
    forged = anchor("ten_a", 5, "00" * 32, key=AnchorKey.parse(authority.new_seed_setting("anchor-guess")))
    found = await verify(journal, [*anchors_of(journal), forged])
    assert (found["ok"], found["reason"], found["untrusted_anchor_count"]) == (
        False,
        "anchor_signature_invalid",
        1,
    )
    assert found["untrusted_anchors"][0]["why"] == "bad signature"
    assert (await verify(journal, [*anchors_of(journal), forged], "ten_b"))["ok"] is True  # another tenant's


async def test_v1_entries_still_verify_and_a_chain_never_goes_back_to_v1(journal: FakeJournal) -> None:
    journal.rows["ten_a"] = entries("ten_a", 5, v1=3)
    journal.heads["ten_a"].head_hash = journal.rows["ten_a"][-1][0].hash
    assert (await verify(journal, anchors_of(journal), "ten_a"))["ok"] is True
    journal.rows["ten_a"] = rows = entries("ten_a", 5, v1=3)
    e = rows[3][0]  # entry 4 is v2: rehash entry 5 in v1 (as a downgrade would)
    rows[4][0].hash = chain.link(e.hash, text_of(rows[4][0], rows[4][1], "v1"))
    journal.heads["ten_a"].head_hash = rows[4][0].hash
    found = await verify(journal, [], "ten_a")
    assert (found["ok"], found["first_bad_entry_id"], found["reason"]) == (
        False,
        "je_ten_a_5",
        "entry_mismatch",
    )


async def test_a_changed_destination_breaks_the_chain_at_the_transfers_entry(journal: FakeJournal) -> None:
    rows = journal.rows["ten_a"]
    first = rows[0][0]
    vars(first).update({f"t_{k}": v for k, v in TRANSFER.items()}, transfer_id="tr_1", deposit_id=None)
    previous = chain.GENESIS
    for e, legs in rows:
        e.hash = previous = chain.link(previous, text_of(e, legs))
    journal.heads["ten_a"].head_hash = previous
    assert (await verify(journal, anchors_of(journal), "ten_a"))["ok"] is True
    first.t_destination = {**TRANSFER["destination"], "address": "0xattacker"}  # type: ignore[dict-item]
    found = await verify(journal, [], "ten_a")
    assert (found["ok"], found["first_bad_entry_id"]) == (False, "je_ten_a_1")


async def test_anchors_that_cannot_be_read_refuse_the_verification(journal: FakeJournal) -> None:
    """Kafka down: 503, never ``ok`` for chains compared with nothing (a topic that is gone is
    a finding: tests/unit/test_journal_anchor_chain.py)."""

    async def unreadable() -> anchors.Found:
        raise TimeoutError("sluice.journal.anchors: not read to its end in 30 s")

    cmd = VerifyJournal(command_id="c", ctx=Ctx(request_id="r", tenant_id="", mode="sandbox"))
    with pytest.raises(ServiceError) as refused:
        await verification.verify_journal(SESSION, cmd, LedgerConfig(read_anchors=unreadable))  # type: ignore[arg-type]
    assert (refused.value.code, refused.value.details["reason"]) == (
        "provider_unavailable",
        "anchors_unreadable",
    )


def test_a_malformed_anchor_key_is_refused_and_never_shown() -> None:
    weak = "abcdefghijklmnopqrstuvwxyz0123456789"  # round 1's kind of key: not kid:base64
    found = Settings(env="production", journal_anchor_key=weak).weak_secrets()  # type: ignore[arg-type]
    assert found == ["SLUICE_JOURNAL_ANCHOR_KEY (entry 1 of SLUICE_JOURNAL_ANCHOR_KEY is not kid:base64)"]
    assert not any(weak in w for w in found)
    short = "anchor-1:" + base64.b64encode(b"x" * 16).decode()
    assert Settings(env="development", journal_anchor_key=short).weak_secrets() == [  # type: ignore[arg-type]
        "SLUICE_JOURNAL_ANCHOR_KEY (key 'anchor-1' of SLUICE_JOURNAL_ANCHOR_KEY must be 32 bytes (Ed25519))"
    ]
    two = f"{SIGNING},{authority.new_seed_setting('anchor-2')}"
    assert Settings(env="development", journal_anchor_key=two).weak_secrets() == [  # type: ignore[arg-type]
        "SLUICE_JOURNAL_ANCHOR_KEY (must be exactly one kid:base64 entry (an Ed25519 seed))"
    ]
    other = authority.public_settings_of(authority.new_seed_setting("anchor-2"))
    mismatched = Settings(env="development", journal_anchor_key=SIGNING, journal_anchor_verify_keys=other)  # type: ignore[arg-type]
    assert mismatched.weak_secrets() == [
        "SLUICE_JOURNAL_ANCHOR_VERIFY_KEYS (no public key of 'anchor-2026a', the key that signs:"
        " every anchor would be untrusted)"
    ]
    assert Settings(env="production", journal_anchor_key=SIGNING).weak_secrets() == []  # type: ignore[arg-type]


def test_a_production_ledger_refuses_to_start_without_the_anchor_keys(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from ledger import app

    public = authority.public_settings_of(SIGNING)
    for given in (
        {"journal_anchor_key": ""},
        {"journal_anchor_key": SIGNING},
        {"journal_anchor_verify_keys": public},
    ):
        with pytest.raises(SystemExit) as stopped:
            app._anchors(Settings(env="production", **given), None)  # type: ignore[arg-type]
        assert stopped.value.code == 2 and "SLUICE_JOURNAL_ANCHOR_KEY" in caplog.text
    assert "SLUICE_JOURNAL_ANCHOR_VERIFY_KEYS" in caplog.text
    assert SIGNING.partition(":")[2] not in caplog.text
    assert app._anchors(Settings(env="development", journal_anchor_key=""), None) is None  # type: ignore[arg-type]


async def test_a_head_anchored_at_genesis_is_extended_by_any_chain(journal: FakeJournal) -> None:
    """A head row a refused command made (seq 0, no entry) can be anchored; that anchor is the
    genesis, which the chain then and every longer chain extend (CI: reported truncated_tail)."""
    genesis = [anchor(t, 0, chain.GENESIS) for t in sorted(journal.heads)]
    found = await verify(
        journal, [*genesis, *[anchor(t, h.seq, h.head_hash) for t, h in sorted(journal.heads.items())]]
    )
    # Two first anchors of a chain: two instances that anchored it at once, both agreeing with it.
    assert (found["ok"], found["anchor_forks"]) == (True, 2), found
    stream = [*chained(genesis[0], anchors_of(journal)[0]), *chained(genesis[1], anchors_of(journal)[1])]
    found = await verify(journal, stream)
    assert (found["ok"], found["anchored"]) == (True, 2), found
    lie = chained(anchor("ten_a", 0, "f" * 64), anchors_of(journal)[0])  # a genesis anchor that lies
    found = await verify(journal, [*lie, anchors_of(journal)[1]])
    assert (found["ok"], found["reason"], found["first_bad_entry_id"]) == (False, "anchor_mismatch", None)


# ---- the answers whole (a partner's operator reads every field; make mutate) ----

AT = "2026-01-02T03:04:05Z"


def shown(a: JournalAnchor) -> dict[str, Any]:
    return {"seq": a.seq, "head_hash": a.head_hash, "anchored_at": AT}


async def test_a_broken_chains_answer_is_whole(journal: FakeJournal) -> None:
    published = anchors_of(journal)
    rewrite(journal, "ten_a", at=2, extra=2)
    assert await verify(journal, published) == {
        "ok": False,
        "entries": 7,
        "head_hash": journal.heads["ten_a"].head_hash,
        "first_bad_entry_id": "je_ten_a_5",
        "problem": f"entry 5 differs from its anchor of {AT}: the chain was rewritten",
        "reason": "anchor_mismatch",
        "anchor": shown(published[0]),
        "tenant_id": "ten_a",
        "mode": "sandbox",
    }
    del journal.rows["ten_b"][1:]
    journal.heads["ten_b"].seq, journal.heads["ten_b"].head_hash = 1, journal.rows["ten_b"][0][0].hash
    assert await verify(journal, published, "ten_b") == {
        "ok": False,
        "entries": 1,
        "head_hash": journal.rows["ten_b"][0][0].hash,
        "first_bad_entry_id": None,
        "problem": f"the chain ends at entry 1, its anchor of {AT} names entry 3",
        "reason": "truncated_tail",
        "anchor": shown(published[1]),
        "anchored_through": None,
        "tenant_id": "ten_b",
        "mode": "sandbox",
    }


async def test_a_missing_heads_answer_is_whole(journal: FakeJournal) -> None:
    published = anchors_of(journal)
    del journal.heads["ten_b"]
    gone = {"ok": False, "head_hash": None, "first_bad_entry_id": None, "reason": "missing_head"}
    assert await verify(journal, published) == {
        **gone,
        "problem": f"the chain's head row is gone; its anchor of {AT} names entry 3",
        "anchor": shown(published[1]),
        "entries": 5,
        "tenant_id": "ten_b",
        "mode": "sandbox",
    }
    assert await verify(journal, []) == {
        **gone,
        "problem": "the chain has entries but no head row",
        "entries": 5,
        "tenant_id": "ten_b",
        "mode": "sandbox",
    }


async def test_a_narrowed_check_reads_only_its_tenant_and_mode(
    journal: FakeJournal, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[tuple[Any, ...]] = []

    async def headless(session: Any, tenant_id: str | None, mode: str | None) -> list[Any]:
        asked.append((tenant_id, mode))
        return []

    monkeypatch.setattr(verification.repo, "headless_chains", headless)
    live = [anchor(t, 9, "cd" * 32, mode="production") for t in ("ten_a", "ten_b")]  # no such chains here
    forged = anchor(
        "ten_a", 9, "00" * 32, key=AnchorKey.parse(authority.new_seed_setting("x1")), mode="production"
    )
    found = await verify(journal, [*anchors_of(journal), *live, forged], mode="sandbox")
    assert (found["ok"], found["anchored"]) == (True, 2), found  # the sandbox anchors, and only them
    assert asked == [(None, "sandbox")]
    found = await verify(journal, [*anchors_of(journal), forged], "ten_a", "sandbox")
    assert (found["ok"], found["anchored"], asked[-1]) == (True, 1, ("ten_a", "sandbox"))
    found = await verify(journal, [*anchors_of(journal), forged], "ten_a")
    assert (found["ok"], found["problem"]) == (
        False,
        "1 records of the anchors topic are not validly signed anchors",
    )
    found = await verify(journal, [*anchors_of(journal), *live])
    assert (found["ok"], found["reason"], found["mode"]) == (False, "missing_head", "production")


async def test_unreadable_anchors_are_logged_and_named(
    journal: FakeJournal, caplog: pytest.LogCaptureFixture
) -> None:
    async def unreadable() -> anchors.Found:
        raise RuntimeError("broker gone")

    cmd = VerifyJournal(command_id="c", ctx=Ctx(request_id="r", tenant_id="", mode="sandbox"))
    with caplog.at_level("WARNING", logger=verification.log.name), pytest.raises(ServiceError) as refused:
        await verification.verify_journal(SESSION, cmd, LedgerConfig(read_anchors=unreadable))  # type: ignore[arg-type]
    assert refused.value.message == "the journal's anchors could not be read; verify_journal did not run"
    assert [r.getMessage() for r in caplog.records] == [
        "journal anchors unreadable: RuntimeError('broker gone')"
    ]

"""The money rules at their edges: fee arithmetic, amount parsing, bank check digits, the
journal's batch application and overdraft rule, the daily cap, idempotency records.

Written against the mutants ``make mutate`` left alive: each test pins a boundary
(``<`` against ``<=``), a rounding direction, a field name or a reason that a refusal must
carry. Stores are replaced by small fakes holding what a statement would have returned: what
is checked here is the logic around the statements; the statements themselves are covered by
the integration tests (test_ledger_batch, test_compliance_caps, test_gateway_idempotency).
"""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import Iterator
from contextlib import asynccontextmanager
from datetime import date
from decimal import Decimal
from types import SimpleNamespace
from typing import Any

import msgspec
import pytest

from common import addresses, checksums, money
from common.cache_mac import FORGED, CacheMac
from common.contracts.base import Ctx
from common.contracts.events import CustomerCreated
from common.errors import ServiceError
from common.fees import developer_fee_amount
from common.keyring import KeyRing, new_key_setting
from common.metrics import CHAIN_CPU
from compliance import allowance
from gateway import idempotency
from ledger import fees as ledger_fees
from ledger import journal
from ledger.config import LedgerConfig
from ledger.core import accounts, chain, effects, entries
from ledger.core import fees as core_fees
from webhooks import signing

pytestmark = pytest.mark.unit
D = Decimal


def refusal(fn: Any, *args: Any) -> ServiceError:
    with pytest.raises(ServiceError) as info:
        fn(*args)
    return info.value


# ---- fees and places ----


@pytest.mark.parametrize(
    ("amount", "pct", "flat", "places", "fee"),
    [
        ("100", "1.5", None, 6, "1.5"),
        ("100", None, "0.25", 2, "0.25"),
        ("100", "1", "2", 2, "3"),
        ("0.999999", "50", None, 6, "0.499999"),  # 0.4999995 rounds DOWN, never up
        ("10", "33.333", None, 2, "3.33"),  # 3.3333 -> 3.33 at two places
        ("10", None, None, 6, "0"),
    ],
)
def test_developer_fee_is_flat_plus_percentage_rounded_down(
    amount: str, pct: str | None, flat: str | None, places: int, fee: str
) -> None:
    got = developer_fee_amount(D(amount), D(pct) if pct else None, D(flat) if flat else None, places)
    assert got == D(fee) and got.as_tuple().exponent == -places


def test_places_per_currency() -> None:
    assert [money.places(c) for c in ("USD", "eur", "GBP", "USDC", "usdt", "XYZ")] == [2, 2, 2, 6, 6, 6]


# ---- bank numbers ----


def test_aba_check_digit_and_validity() -> None:
    assert checksums.aba_check_digit("02100002") == "1"  # 021000021, JPMorgan Chase
    assert checksums.aba_check_digit("01100001") == "5"  # 011000015, the Fed in Boston
    assert checksums.aba_check_digit("00000000") == "0"  # a sum of 0 needs 0, not 10
    assert checksums.aba_valid("021000021") and checksums.aba_valid("011000015")
    for bad in ("021000022", "02100002", "0210000211", "02100002a", "０21000021", ""):
        assert not checksums.aba_valid(bad), bad


def test_iban_make_and_check() -> None:
    made = checksums.iban("DE", "370400440532013000")
    assert made == "DE89370400440532013000"
    assert checksums.iban("GB", "NWBK60161331926819") == "GB29NWBK60161331926819"
    assert checksums.iban("XX", "0000000000003") == "XX090000000000003"  # check digits 2 wide
    assert checksums.iban_valid("de89 3704 0044 0532 0130 00")
    assert checksums.normalize_iban("de89 3704") == "DE893704"
    assert checksums.iban_valid("GB29NWBK60161331926819")
    assert checksums.iban_valid("NO9386011117947")  # 15 characters: the shortest IBAN
    assert checksums.iban_valid("LC55HEMM000100010012001200023015")  # 32 characters
    for bad in (
        "DE89370400440532013001",  # a digit changed
        "DE8937040044053201300",  # one short
        "NO938601111794",  # 14: too short
        "DE89370400440532013000" + "0" * 13,  # 35: too long
        "1E89370400440532013000",  # no country
        "DEX9370400440532013000",  # check digits not digits
        "DE89-370400440532013000",
        "DE89３70400440532013000",
    ):
        assert not checksums.iban_valid(bad), bad


# ---- amounts ----


@pytest.mark.parametrize(
    ("text", "places", "amount"),
    [(" 1.50 ", 2, "1.5"), ("0.000001", 6, "0.000001"), ("1000000000000", 2, "1e12"), ("7", 0, "7")],
)
def test_ledger_amounts_accepted(text: str, places: int, amount: str) -> None:
    assert effects.parse_amount(text, places, "source.amount") == D(amount)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (None, "amount is required"),
        ("abc", "amount must be a decimal string"),
        ("0", "amount must be greater than zero"),
        ("-1", "amount must be greater than zero"),
        ("NaN", "amount must be greater than zero"),
        ("Infinity", "amount must be greater than zero"),
        ("1000000000000.01", "amount must be at most 1000000000000"),
        ("0.0000001", "amount has more than 6 decimal places"),
    ],
)
def test_ledger_amounts_refused_naming_the_field(text: str | None, message: str) -> None:
    err = refusal(effects.parse_amount, text, 6, "source.amount")
    assert (err.code, err.message, err.details["field"]) == ("invalid_request", message, "source.amount")


def test_money_text_keeps_two_to_six_places() -> None:
    assert [effects.money(D(v)) for v in ("100", "0.1", "0.123456", "0.1234567", "12.30", "-1.5", "0")] == [
        "100.00",
        "0.10",
        "0.123456",
        "0.123457",
        "12.30",
        "-1.50",
        "0.00",
    ]


def test_effects_stamp_events_with_the_command_context() -> None:
    ctx = Ctx(tenant_id="ten_1", mode="sandbox", request_id="req_1")
    ledger_effects = effects.Effects(201, {"id": 1})
    ledger_effects.emit(CustomerCreated, ctx, data={"customer_id": "cus_1"})
    ledger_effects.emit(CustomerCreated, ctx, created_at="2026-01-01T00:00:00Z", data={})
    first, second = ledger_effects.events
    assert (ledger_effects.status, ledger_effects.data) == (201, {"id": 1})
    assert (first.tenant_id, first.mode, first.request_id) == ("ten_1", "sandbox", "req_1")
    assert first.event_id.startswith("evt_") and first.event_id != second.event_id
    assert first.created_at.endswith("Z") and second.created_at == "2026-01-01T00:00:00Z"
    err = effects.missing("wallet", "source.provider_wallet_id")
    assert (err.code, err.message, err.details) == (
        "not_found",
        "wallet not found",
        {"field": "source.provider_wallet_id"},
    )


def _transfer(amount: str, pct: str | None = None, flat: str | None = None) -> Any:
    fee = None if pct is None and flat is None else SimpleNamespace(percentage=pct, flat_amount=flat)
    return SimpleNamespace(developer_fee=fee, amount=amount)


def test_the_fee_a_transfer_charges() -> None:
    assert core_fees.charged(_transfer("10"), D(10), 6) == 0
    assert core_fees.charged(_transfer("10", pct="10", flat="0"), D(10), 6) == D("1.000000")
    assert core_fees.charged(_transfer("10", flat="9.999999"), D(10), 6) == D("9.999999")
    for pct, flat, field, message in [
        (None, "10", "developer_fee", "the developer fee must be less than the amount"),  # equal
        ("-1", None, "developer_fee.percentage", "must be a non-negative decimal"),
        ("x", None, "developer_fee.percentage", "must be a decimal string"),
        (None, "Infinity", "developer_fee.flat_amount", "must be a non-negative decimal"),
        (None, "-0.01", "developer_fee.flat_amount", "must be a non-negative decimal"),
    ]:
        err = refusal(core_fees.charged, _transfer("10", pct, flat), D(10), 6)
        assert (err.details["field"], err.message) == (field, message)
    assert core_fees.charged(_transfer("10", pct="0", flat="0"), D(10), 6) == 0  # zero is allowed


async def test_fee_balances_answer_one_row_per_currency(monkeypatch: pytest.MonkeyPatch) -> None:
    given = object()

    async def rows(session: Any, tenant_id: str, mode: str) -> list[tuple[str, Decimal]]:
        assert (session, tenant_id, mode) == (given, "ten_1", "sandbox")
        return [("USDC", D("1.5")), ("USDT", D(0))]

    monkeypatch.setattr(ledger_fees.repo, "fee_balances", rows)
    cmd = SimpleNamespace(ctx=SimpleNamespace(tenant_id="ten_1", mode="sandbox"))
    ledger_effects = await ledger_fees.fee_balances(given, cmd, LedgerConfig())  # type: ignore[arg-type]
    assert (ledger_effects.status, ledger_effects.data) == (
        200,
        {
            "items": [
                {"currency": "USDC", "available_balance": "1.50"},
                {"currency": "USDT", "available_balance": "0.00"},
            ],
            "next_cursor": None,
        },
    )


# ---- the journal ----


def test_account_names_and_the_completion_of_a_transfer() -> None:
    assert (accounts.available("w1"), accounts.held("w1")) == ("w1.available", "w1.held")
    assert accounts.external("t", "sandbox", "USDC", "deposits") == "ext.t.sandbox.USDC.deposits"
    assert accounts.fees("t", "sandbox", "USDC") == "ext.t.sandbox.USDC.fees"
    assert accounts.is_external("ext.t.sandbox.USDC.fees") and not accounts.is_external("w1.ext")
    assert accounts.completion("t", "sandbox", "w1", "w2.available", "USDC", D(10), D(0)) == [
        ("w1.held", "USDC", D(-10)),
        ("w2.available", "USDC", D(10)),
    ]
    assert accounts.completion("t", "sandbox", "w1", "w2.available", "USDC", D(10), D(1)) == [
        ("w1.held", "USDC", D(-10)),
        ("w2.available", "USDC", D(9)),
        ("ext.t.sandbox.USDC.fees", "USDC", D(1)),
    ]
    settled_at_once = accounts.completion(
        "t", "sandbox", "w1", "w2.available", "USDC", D(10), D(1), from_held=False
    )
    assert settled_at_once[0] == ("w1.available", "USDC", D(-10))  # a book transfer: nothing held
    err = entries.insufficient_funds("w1", D(5))
    assert (err.code, err.details) == (
        "invalid_request",
        {"reason": "insufficient_funds", "field": "source.amount", "wallet_id": "w1"},
    )


#: The transfer row ``tr_1``'s terms, as an entry of it covers them (``chain.transfer_text``).
TR_1 = {
    "kind": "transfer",
    "route": "book",
    "currency": "USDC",
    "amount": D(1),
    "fee_amount": D(0),
    "source_wallet_id": "w1",
    "destination_wallet_id": "w2",
    "destination": {"payment_rail": "provider_wallet", "currency": "USDC", "provider_wallet_id": "w2"},
}


def _entry(*postings: tuple[str, str, str], kind: str = "transfer_hold") -> entries.Entry:
    return entries.entry(
        tenant_id="t",
        mode="sandbox",
        kind=kind,
        postings=[(a, c, D(x)) for a, c, x in postings],
        transfer_id="tr_1",
        transfer=TR_1,
    )


def test_an_entry_must_balance_in_every_currency() -> None:
    e = _entry(("w1.available", "USDC", "-5"), ("w1.held", "USDC", "5"))
    assert e.id.startswith("je_") and (e.tenant_id, e.mode, e.kind, e.transfer_id) == (
        "t",
        "sandbox",
        "transfer_hold",
        "tr_1",
    )
    assert e.deposit_id is None and len(e.postings) == 2
    for postings in (
        [("a", "USDC", "-5"), ("b", "USDC", "4")],
        [("a", "USDC", "-5"), ("b", "USDT", "5")],  # balanced in total, not per currency
        [],
    ):
        with pytest.raises(entries.UnbalancedEntry):
            _entry(*postings)
    _entry(("a", "USDC", "-5"), ("b", "USDC", "5"), ("c", "USDT", "1"), ("d", "USDT", "-1"))


SESSION = object()  # the session the journal must hand to every statement


class FakeLedger:
    """What the journal's four statements would do, in memory: the account rows."""

    def __init__(self, balances: dict[str, str]) -> None:
        self.balances = {k: D(v) for k, v in balances.items()}
        self.locked: list[list[str]] = []
        self.externals: list[dict[str, Any]] = []
        self.entries: list[dict[str, Any]] = []
        self.postings: list[dict[str, Any]] = []
        self.deltas: dict[str, Decimal] = {}
        self.chains: dict[tuple[str, str], tuple[int, str]] = {}
        self.chain_locks: list[list[tuple[str, str]]] = []
        self.session: Any = SESSION  # every statement must run in this session

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(journal.repo, "lock_batch", self.lock_batch)
        monkeypatch.setattr(journal.repo, "write_batch", self.write_batch)

    async def lock_batch(
        self,
        session: Any,
        new_transfers: list[dict[str, Any]],
        externals: list[dict[str, Any]],
        account_ids: list[str],
        chains: list[tuple[str, str]],
    ) -> Any:
        """The lock statement: externals created, accounts locked, then the chain heads."""
        await self.ensure(session, externals)
        balances = await self.lock(session, account_ids)
        heads = await self.lock_chains(session, chains)
        return SimpleNamespace(inserted={t["id"] for t in new_transfers}, balances=balances, heads=heads)

    async def write_batch(self, session: Any, w: Any) -> list[int]:
        """The write statement's journal part: entries and postings, balances, chain heads."""
        await self.insert(session, w.entries, w.postings)
        await self.add(session, w.deltas)
        await self.save_chains(session, w.heads)
        return []

    async def ensure(self, session: Any, rows: list[dict[str, Any]]) -> None:
        assert session is self.session
        self.externals.extend(rows)

    async def lock_chains(
        self, session: Any, keys: list[tuple[str, str]]
    ) -> dict[tuple[str, str], tuple[int, str]]:
        assert session is self.session
        self.chain_locks.append(keys)
        return {k: self.chains.get(k, (0, chain.GENESIS)) for k in keys}

    async def save_chains(self, session: Any, heads: dict[tuple[str, str], tuple[int, str]]) -> None:
        assert session is self.session
        self.chains.update(heads)

    async def lock(self, session: Any, ids: list[str]) -> dict[str, Decimal]:
        assert session is self.session
        self.locked.append(ids)
        return {i: self.balances[i] for i in ids if i in self.balances}

    async def insert(
        self, session: Any, entries: list[dict[str, Any]], postings: list[dict[str, Any]]
    ) -> None:
        assert session is self.session
        self.entries.extend(entries)
        self.postings.extend(postings)

    async def add(self, session: Any, deltas: dict[str, Decimal]) -> None:
        assert session is self.session
        self.deltas = dict(deltas)
        for k, v in deltas.items():
            self.balances[k] += v


def _hold(wallet: str, amount: str) -> entries.Entry:
    return _entry((f"{wallet}.available", "USDC", f"-{amount}"), (f"{wallet}.held", "USDC", amount))


def _deposit(tenant: str, amount: Decimal, deposit_id: str) -> entries.Entry:
    """``amount`` USDC from the tenant's deposits account into w2."""
    return entries.entry(
        tenant_id=tenant,
        mode="sandbox",
        kind="deposit",
        postings=[(f"ext.{tenant}.sandbox.USDC.deposits", "USDC", -amount), ("w2.available", "USDC", amount)],
        deposit_id=deposit_id,
    )


@pytest.fixture
def ledger(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLedger]:
    fake = FakeLedger({"w1.available": "10", "w1.held": "0", "w2.available": "0", "w2.held": "0"})
    fake.install(monkeypatch)
    yield fake


async def test_a_batch_is_applied_in_order_and_an_overdraft_is_refused_alone(ledger: FakeLedger) -> None:
    j = journal.Journal()
    first = j.add([_hold("w1", "6")], refusable_for="w1")
    second = j.add([_hold("w1", "5")], refusable_for="w1")  # 4 left: refused
    third = j.add([_hold("w1", "4")], refusable_for="w1")  # exactly what is left: accepted
    deposit = _deposit("t", D(3), "dep_1")
    j.add([deposit])
    await j.apply(SESSION)  # type: ignore[arg-type]
    assert (first.refused, second.refused, third.refused) == (False, True, False)
    assert ledger.locked == [["w1.available", "w1.held", "w2.available"]]  # once, in id order
    assert ledger.externals == [
        {
            "id": "ext.t.sandbox.USDC.deposits",
            "tenant_id": "t",
            "mode": "sandbox",
            "currency": "USDC",
            "kind": "deposits",
        }
    ]
    assert ledger.deltas == {"w1.available": D(-10), "w1.held": D(10), "w2.available": D(3)}
    assert ledger.balances == {"w1.available": 0, "w1.held": 10, "w2.available": 3, "w2.held": 0}
    written = [e["id"] for e in ledger.entries]
    assert written == [first.entries[0].id, third.entries[0].id, deposit.id]
    assert [e["deposit_id"] for e in ledger.entries] == [None, None, "dep_1"]
    assert all(e["transfer_id"] == "tr_1" for e in ledger.entries[:2])
    assert len(ledger.postings) == 6 and {p["entry_id"] for p in ledger.postings} == set(written)
    assert ledger.entries[0]["created_at"].tzinfo is not None
    assert j.movements == [] and j.lock_wait_s >= 0


async def test_a_movement_of_several_entries_is_taken_back_whole(ledger: FakeLedger) -> None:
    j = journal.Journal()
    # a book transfer: hold then complete; the completion is fine, the hold overdraws
    complete = entries.entry(
        tenant_id="t",
        mode="sandbox",
        kind="transfer_completed",
        postings=accounts.completion("t", "sandbox", "w1", "w2.available", "USDC", D(11), D(0)),
    )
    move = j.add([_hold("w1", "11"), complete], refusable_for="w1")
    ok = j.add([_hold("w1", "10")], refusable_for="w1")
    await j.apply(SESSION)  # type: ignore[arg-type]
    assert move.refused and not ok.refused
    assert ledger.balances["w2.available"] == 0 and ledger.balances["w1.held"] == 10


async def test_a_second_entry_that_overdraws_takes_the_first_back(ledger: FakeLedger) -> None:
    j = journal.Journal()
    move = j.add([_hold("w1", "4"), _hold("w1", "7")], refusable_for="w1")  # 4 fits, then 7 does not
    after = j.add([_hold("w1", "10")], refusable_for="w1")  # all 10 are there again
    await j.apply(SESSION)  # type: ignore[arg-type]
    assert move.refused and not after.refused
    assert ledger.balances == {"w1.available": 0, "w1.held": 10, "w2.available": 0, "w2.held": 0}


async def test_money_that_may_not_be_refused_never_overdraws(ledger: FakeLedger) -> None:
    j = journal.Journal()
    j.add([_hold("w1", "11")])  # refusable_for None: a release or a settlement
    with pytest.raises(entries.NegativeBalance):
        await j.apply(SESSION)  # type: ignore[arg-type]
    j = journal.Journal()
    j.add([_hold("w9", "1")], refusable_for="w9")
    with pytest.raises(LookupError, match="w9"):
        await j.apply(SESSION)  # type: ignore[arg-type]


async def test_an_empty_journal_writes_nothing_and_a_rolled_back_command_posts_nothing(
    ledger: FakeLedger,
) -> None:
    j = journal.Journal()
    await j.apply(SESSION)  # type: ignore[arg-type]
    assert ledger.locked == [] and ledger.entries == []
    j.add([_hold("w1", "1")])
    mark = j.mark()
    assert mark == 1
    j.add([_hold("w1", "2")])
    j.rollback_to(mark)
    assert len(j.movements) == 1
    await j.apply(SESSION)  # type: ignore[arg-type]
    assert ledger.balances["w1.held"] == 1


async def test_the_transactions_journal_is_begun_posted_applied_and_guarded(ledger: FakeLedger) -> None:
    """The boundary begins the journal and hands it on; the commit guard still finds it through
    the session, so money posted and never applied (or applied and never written) cannot
    commit, whoever forgot."""
    session = SimpleNamespace(info={})
    ledger.session = session
    sync = SimpleNamespace(info=session.info, in_nested_transaction=lambda: False)
    journal._refuse_unapplied(sync)  # type: ignore[arg-type]  # no journal begun: nothing to refuse
    j = journal.Journal.begin(session)  # type: ignore[arg-type]
    journal._refuse_unapplied(sync)  # type: ignore[arg-type]  # nothing posted: the commit may go on
    j.add([_hold("w1", "3")])
    with pytest.raises(journal.UnappliedJournal, match="1 journal movements were never applied"):
        journal._refuse_unapplied(sync)  # type: ignore[arg-type]
    nested = SimpleNamespace(info=session.info, in_nested_transaction=lambda: True)
    journal._refuse_unapplied(nested)  # type: ignore[arg-type]  # a savepoint may commit
    await j.lock(session)  # type: ignore[arg-type]
    j.check()
    with pytest.raises(journal.UnappliedJournal, match="applied journal entries were never written"):
        journal._refuse_unapplied(sync)  # type: ignore[arg-type]
    await journal.repo.write_batch(session, j.take())  # type: ignore[arg-type]
    journal._refuse_unapplied(sync)  # type: ignore[arg-type]  # written: the commit may go on
    assert ledger.balances["w1.held"] == 3
    rolled_back = journal.Journal.begin(session)  # type: ignore[arg-type]
    assert rolled_back is not j and session.info[journal.SESSION_KEY] is rolled_back


async def test_a_twin_is_dropped_and_new_transfers_alone_are_still_inserted(ledger: FakeLedger) -> None:
    j = journal.Journal()
    twin = j.add([_hold("w1", "2")], refusable_for="w1")
    kept = j.add([_hold("w1", "3")], refusable_for="w1")
    j.drop(twin)  # a concurrent twin's movement: not this batch's
    assert j.movements == [kept]
    empty = journal.Journal()  # a batch whose commands posted nothing yet inserts its transfers
    assert await empty.lock(SESSION, [{"id": "tr_9"}]) == {"tr_9"}  # type: ignore[arg-type]
    assert ledger.locked == [[]]


async def test_the_journal_refuses_out_of_order_use_and_says_why(ledger: FakeLedger) -> None:
    j = journal.Journal()
    j.add([_hold("w1", "1")], refusable_for="w1")
    with pytest.raises(journal.UnappliedJournal) as unlocked:
        j.check()
    assert str(unlocked.value) == "1 journal movements were checked before being locked"
    j.add([_hold("w1", "1")], refusable_for="w1")
    await j.lock(SESSION)  # type: ignore[arg-type]
    j.check()
    with pytest.raises(journal.UnappliedJournal) as unwritten:
        await j.lock(SESSION)  # type: ignore[arg-type]
    assert str(unwritten.value) == "write what the journal checked before locking again"
    with pytest.raises(ValueError) as half:
        entries.entry(tenant_id="t", mode="sandbox", kind="transfer_hold", postings=[], transfer_id="tr_1")
    assert str(half.value) == "transfer_hold: an entry of a transfer names the transfer's id and its row"


# ---- the daily cap of a batch ----


def _claim(i: int, amount: str, daily: str = "100", tenant: str = "a") -> allowance.Claim:
    return allowance.Claim(
        f"c{i}", f"tr{i}", tenant, "production", "USDC", date(2026, 1, 1), D(amount), D(daily)
    )


class FakeUsage:
    def __init__(self, used: dict[Any, Decimal], released: list[Any] | None = None) -> None:
        self.used, self.released = used, released or []
        self.locked: list[list[Any]] = []
        self.set: dict[Any, Decimal] = {}
        self.marked: list[Any] = []
        self.sessions: list[Any] = []

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        for name in ("lock_usage", "set_usage", "mark_released", "mark_released_for"):
            monkeypatch.setattr(allowance.repo, name, getattr(self, name))

    async def lock_usage(self, session: Any, keys: list[Any]) -> dict[Any, Decimal]:
        self.sessions.append(session)
        self.locked.append(keys)
        return {k: self.used.get(k, D(0)) for k in keys}

    async def set_usage(self, session: Any, totals: dict[Any, Decimal]) -> None:
        self.sessions.append(session)
        self.set = dict(totals)

    async def mark_released(self, session: Any, holds: list[Any]) -> list[Any]:
        self.sessions.append(session)
        self.marked = holds
        return self.released

    # By (transfer_id, tenant_id) or, for failed commands, (transfer_id, command_id, tenant_id):
    # either way ``released`` stands for the holds the store found (none: no hold of that key).
    mark_released_for = mark_released


DAY = date(2026, 1, 1)
DAY_KEY = ("a", "production", "USDC", DAY)


def released_rows(first: str, second: str) -> list[Any]:
    """The holds the store marks released: ``first`` on tr1, ``second`` on tr2, on DAY_KEY."""
    row: dict[str, Any] = {"tenant_id": "a", "mode": "production", "currency": "USDC", "day": DAY}
    return [
        SimpleNamespace(transfer_id="tr1", amount=first, **row),
        SimpleNamespace(transfer_id="tr2", amount=second, **row),
    ]


async def test_release_gives_each_amount_back_once_and_never_below_zero(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    key, released = DAY_KEY, released_rows("30", "20")
    fake = FakeUsage({key: D(40)}, released)
    fake.install(monkeypatch)
    session = object()
    back = await allowance.release(session, [("tr2", "a"), ("tr1", "a"), ("tr1", "a")])  # type: ignore[arg-type]
    assert fake.sessions == [session] * 3
    assert fake.marked == [("tr1", "a"), ("tr2", "a")]
    assert back == {"tr1": D(30), "tr2": D(20)}
    assert fake.locked == [[key]] and fake.set == {key: D(0)}  # 40 - 50 stops at zero
    fake = FakeUsage({key: D(60)}, released)
    fake.install(monkeypatch)
    await allowance.release(None, [("tr1", "a")])  # type: ignore[arg-type]
    assert fake.set == {key: D(10)}
    fake = FakeUsage({key: D(60)}, [])
    fake.install(monkeypatch)
    assert await allowance.release(None, [("tr1", "a")]) == {}  # type: ignore[arg-type]
    assert fake.locked == [] and fake.set == {}


async def test_a_failed_command_gets_its_own_holds_back_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The ledger reports failures as (transfer_id, command_id, tenant_id): the store is asked
    once for the distinct failures in key order, in the caller's transaction, and the amounts
    it marked released go back to their days (a failure reported twice is given back once)."""
    key, released = DAY_KEY, released_rows("12.5", "0.25")
    fake = FakeUsage({key: D(70)}, released)
    fake.install(monkeypatch)
    session = object()
    failed = [("tr2", "cmd_2", "a"), ("tr1", "cmd_1", "a"), ("tr1", "cmd_1", "a")]
    back = await allowance.release_failed(session, failed)  # type: ignore[arg-type]
    assert back == {"tr1": D("12.5"), "tr2": D("0.25")}
    assert fake.marked == [("tr1", "cmd_1", "a"), ("tr2", "cmd_2", "a")]
    assert fake.sessions == [session] * 3  # marked, locked and set in one transaction
    assert fake.locked == [[key]] and fake.set == {key: D("57.25")}


async def test_a_command_that_took_no_hold_of_its_transfer_id_gets_nothing_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A command that reused another's transfer id failed: the store matches no hold of that
    command, so no day's usage is locked or lowered."""
    fake = FakeUsage({DAY_KEY: D(30)}, [])
    fake.install(monkeypatch)
    assert await allowance.release_failed(None, [("tr1", "cmd_reuser", "a")]) == {}  # type: ignore[arg-type]
    assert fake.marked == [("tr1", "cmd_reuser", "a")]
    assert fake.locked == [] and fake.set == {}


async def test_allot_batch_uses_the_rows_the_batch_locked_and_locks_only_the_rest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    day = date(2026, 1, 1)
    key, other = ("a", "production", "USDC", day), ("b", "production", "USDC", day)
    fake = FakeUsage({other: D(98)})
    fake.install(monkeypatch)
    assert await allowance.allot_batch(None, [], {key: D(0)}) == ({}, {}, {})  # type: ignore[arg-type]
    assert fake.locked == []
    session = object()
    claims = [_claim(1, "10"), _claim(2, "0.01"), _claim(3, "2", tenant="b"), _claim(4, "0.5", tenant="b")]
    refused, totals, holds = await allowance.allot_batch(session, claims, {key: D(90)})  # type: ignore[arg-type]
    assert fake.sessions == [session] and fake.locked == [[other]]  # the batch locked ``key``
    assert refused == {"c2": D(100), "c4": D(100)}
    assert totals == {key: D(100), other: D(100)}
    # each granted claim's hold: the ``hold_*`` columns of its decision, by command id
    assert holds == {
        "c1": {"hold_currency": "USDC", "hold_day": day, "hold_amount": D(10)},
        "c3": {"hold_currency": "USDC", "hold_day": day, "hold_amount": D(2)},
    }
    assert fake.set == {}  # written by the batch's statement, not here
    fake = FakeUsage({})
    fake.install(monkeypatch)
    refused, totals, holds = await allowance.allot_batch(None, [_claim(1, "5")], {key: D(1)})  # type: ignore[arg-type]
    assert fake.locked == [] and refused == {} and totals == {key: D(6)} and len(holds) == 1


def test_a_claim_within_the_cap_exactly_is_granted() -> None:
    refused, grown = allowance.allot([_claim(1, "100"), _claim(2, "0.000001")], {})
    assert refused == {"c2": D(100)} and list(grown.values()) == [D(100)]
    assert _claim(1, "1").key == ("a", "production", "USDC", date(2026, 1, 1))


# ---- idempotency ----


def test_fingerprints_and_command_ids() -> None:
    fingerprint = idempotency.fingerprint("POST", "/v1/transfers", {"b": 1, "a": [1, 2]})
    assert fingerprint == idempotency.fingerprint("POST", "/v1/transfers", {"a": [1, 2], "b": 1})  # key order
    assert len(fingerprint) == 64 and int(fingerprint, 16) >= 0
    for other in (
        idempotency.fingerprint("PUT", "/v1/transfers", {"b": 1, "a": [1, 2]}),
        idempotency.fingerprint("POST", "/v1/payouts", {"b": 1, "a": [1, 2]}),
        idempotency.fingerprint("POST", "/v1/transfers", {"b": 1, "a": [2, 1]}),
    ):
        assert other != fingerprint
    cid = idempotency.command_id("ten", "sandbox", "key12345", fingerprint)
    assert cid.startswith("cmd_") and len(cid) == 36
    assert cid == idempotency.command_id("ten", "sandbox", "key12345", fingerprint)
    assert cid != idempotency.command_id("ten", "production", "key12345", fingerprint)
    assert cid != idempotency.command_id("ten", "sandbox", "key12346", fingerprint)
    assert [idempotency.invites_retry(s) for s in (200, 409, 499, 500, 503)] == [False] * 3 + [True] * 2


def test_idempotency_keys_are_8_to_256_printable_ascii() -> None:
    assert idempotency.validate_key("k" * 8) == "k" * 8
    assert idempotency.validate_key(" ~" * 128) == " ~" * 128
    assert refusal(idempotency.validate_key, None).code == "idempotency_key_required"
    for bad in ("k" * 7, "k" * 257, "kkkkkkk\x1f", "kkkkkkk\x7f", "kkkkkkké"):
        err = refusal(idempotency.validate_key, bad)
        assert (err.code, err.details) == ("invalid_request", {"field": "Idempotency-Key"})


class FakeRedis:
    """SET NX PX, GET, DEL and a pipeline: the calls the store makes, on a dict."""

    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}
        self.ttl: dict[str, tuple[str, int]] = {}
        self.vanish_once: set[str] = set()

    async def set(
        self, name: str, value: bytes, nx: bool = False, px: int | None = None, ex: int | None = None
    ) -> bool:
        if nx and name in self.data:
            return False
        self.data[name] = value
        self.ttl[name] = ("px", px) if px is not None else ("ex", ex or 0)
        return True

    async def get(self, name: str) -> bytes | None:
        if name in self.vanish_once:  # the record expired between SET NX and GET
            self.vanish_once.discard(name)
            self.data.pop(name, None)
            return None
        return self.data.get(name)

    async def delete(self, name: str) -> None:
        self.data.pop(name, None)

    @asynccontextmanager
    async def pipeline(self, transaction: bool = True) -> Any:
        assert transaction is False  # independent SETs and DELs in one round trip, no MULTI
        calls: list[Any] = []
        pipe = SimpleNamespace(
            set=lambda *a, **k: calls.append(self.set(*a, **k)),
            delete=lambda *a: calls.append(self.delete(*a)),
            execute=None,
        )

        async def execute() -> None:
            for c in calls:
                await c

        pipe.execute = execute
        yield pipe


@pytest.fixture
def store() -> idempotency.IdempotencyStore:
    ring = KeyRing.parse(new_key_setting("k1"))
    mac = CacheMac.parse(new_key_setting("c1"))
    return idempotency.IdempotencyStore(FakeRedis(), ttl_s=3600, wait_s=0.1, ring=ring, lease_s=2.5, mac=mac)  # type: ignore[arg-type]


async def test_the_first_request_owns_the_key_and_a_retry_replays_it(
    store: idempotency.IdempotencyStore,
) -> None:
    redis: FakeRedis = store.redis  # type: ignore[assignment]
    name = store.name("ten", "sandbox", "key12345")
    assert name.startswith("sluice:idem:ten:sandbox:") and "key12345" not in name
    assert name != store.name("ten", "production", "key12345")
    assert await store.begin(name, "fp1") is None
    assert redis.ttl[name] == ("px", 2500)  # the pending lease, not the record's lifetime
    await store.complete(name, "fp1", 201, b'{"secret":"shown once"}')
    assert redis.ttl[name] == ("ex", 3600)
    assert b"shown once" not in redis.data[name]  # sealed at rest
    replay = await store.begin(name, "fp1")
    assert replay == idempotency.Replay(201, b'{"secret":"shown once"}')
    err = await _refused(store.begin(name, "fp2"))
    assert err.code == "idempotency_replay_mismatch"


async def _refused(coro: Any) -> ServiceError:
    with pytest.raises(ServiceError) as info:
        await coro
    return info.value


async def test_a_key_in_flight_waits_then_answers_503_and_a_5xx_is_never_final(
    store: idempotency.IdempotencyStore,
) -> None:
    redis: FakeRedis = store.redis  # type: ignore[assignment]
    name = store.name("ten", "sandbox", "key12345")
    assert await store.begin(name, "fp1") is None
    err = await _refused(store.begin(name, "fp1"))
    assert (err.code, err.headers) == ("provider_unavailable", {"Retry-After": "1"})
    await store.complete_many([(name, "fp1", 503, b"down")])
    assert name not in redis.data  # released: the retry runs again
    assert await store.begin(name, "fp1") is None
    await store.abandon(name)
    assert name not in redis.data
    await store.complete_many([])
    redis.data[name] = msgspec.json.encode(idempotency.Record(state="pending", request_fingerprint="fp1"))
    redis.vanish_once.add(name)
    assert await store.begin(name, "fp1") is None  # expired meanwhile: this request owns it now


async def test_the_key_lookups_claim_is_used_as_the_first_try(store: idempotency.IdempotencyStore) -> None:
    """gateway.auth's script claims the key in the API key's round trip: ``begin`` starts from
    what it found instead of asking Redis again."""
    name = store.name("ten", "sandbox", "key12345")
    assert await store.begin(name, "fp1", idempotency.Claimed(owned=True)) is None
    assert name not in store.redis.data  # type: ignore[attr-defined]  # owned by the script
    await store.complete(name, "fp1", 201, b"made")
    found = idempotency.Claimed(owned=False, found=store.redis.data[name])  # type: ignore[attr-defined]
    assert await store.begin(name, "fp1", found) == idempotency.Replay(201, b"made")
    err = await _refused(store.begin(name, "fp2", found))
    assert err.code == "idempotency_replay_mismatch"
    gone = idempotency.Claimed(owned=False, found=None)  # expired between script and here
    assert await store.begin(store.name("ten", "sandbox", "other123"), "fp1", gone) is None


# ---- what the first `make mutate` left alive ----


def test_iban_length_country_and_check_digit_positions() -> None:
    assert checksums.iban_valid(checksums.iban("XX", "1" * 30))  # 34 characters: the longest
    assert not checksums.iban_valid(checksums.iban("XX", "1" * 31))  # 35, though its digits check
    assert not checksums.iban_valid("12350000000000003")  # digits check, but no country letters
    assert not checksums.iban_valid("XXA500000000000018")  # digits check, but "A5" are no check digits


def test_base58_padding_and_base58check_lengths() -> None:
    assert addresses.b58encode(b"\0\0\x01") == "112"
    assert addresses.b58decode("112") == b"\0\0\x01"
    assert addresses.b58decode("111") == b"\0\0\0"
    assert addresses.b58decode("") == b""
    assert addresses.b58check_valid(addresses.b58check_encode(b"\x01"))  # 5 bytes in all
    assert not addresses.b58check_valid(addresses.b58encode(addresses._checksum(b"")))  # 4: no payload


def test_address_problems_say_why() -> None:
    assert (
        addresses.problem("eth", "0xA" + "bc" * 19 + "d")
        == "the mixed-case address fails its EIP-55 checksum"
    )
    assert addresses.problem("TRON", "0x" + "ab" * 20) == "a TRON address is base58check starting with T"
    t22 = addresses.b58check_encode(b"\x42" + bytes(20))  # starts with T, but 0x42
    assert addresses.problem("TRON", t22) == "a TRON address is base58check of 21 bytes starting with 0x41"
    assert addresses.problem("DOGE", "x") == "unknown chain DOGE"
    sol = addresses.b58encode(bytes(range(1, 33)))
    assert addresses.chains_of(sol) == ["sol"]


def test_signing_keys_with_or_without_prefix() -> None:
    raw = bytes(range(32))
    encoded = base64.b64encode(raw).decode()
    assert signing.secret_key("whsec_" + encoded) == raw
    assert signing.secret_key(encoded) == raw
    box = signing.SecretBox(KeyRing.parse(new_key_setting("k1")))
    sealed = box.seal_secret("whsec_x", "wh_1")
    with pytest.raises(ValueError, match=r"\S"):
        box.open_secret(sealed, "wh_2")


async def test_store_passes_its_session_and_counts_lock_waits(
    ledger: FakeLedger, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = object()
    ledger.session = session
    seen: list[object] = []
    for name in ("lock_batch", "write_batch"):
        inner = getattr(journal.repo, name)

        async def spy(s: Any, *args: Any, _inner: Any = inner) -> Any:
            seen.append(s)
            return await _inner(s, *args)

        monkeypatch.setattr(journal.repo, name, spy)
    j = journal.Journal()
    j.add([_hold("w1", "1")], refusable_for="w1")
    await j.apply(session)  # type: ignore[arg-type]
    first = j.lock_wait_s
    j.add([_hold("w1", "1")], refusable_for="w1")
    other_session = object()
    ledger.session = other_session
    await j.apply(other_session)  # type: ignore[arg-type]
    assert seen[:2] == [session] * 2 and seen[2:] == [other_session] * 2
    assert 0 < first <= j.lock_wait_s < 1  # accumulated, in seconds
    [entry] = ledger.entries[:1]
    assert set(entry) == {
        "id",
        "tenant_id",
        "mode",
        "kind",
        "transfer_id",
        "deposit_id",
        "created_at",
        "seq",
        "hash",
    }
    assert (entry["tenant_id"], entry["mode"], entry["kind"]) == ("t", "sandbox", "transfer_hold")
    assert ledger.postings[:2] == [
        {"entry_id": entry["id"], "account_id": "w1.available", "currency": "USDC", "amount": D(-1)},
        {"entry_id": entry["id"], "account_id": "w1.held", "currency": "USDC", "amount": D(1)},
    ]
    assert (
        entries.insufficient_funds("w1", D(1)).message
        == "insufficient available balance in the source wallet"
    )
    with pytest.raises(
        entries.UnbalancedEntry, match=r"transfer_hold does not balance: \{'USDC': Decimal\('-1'\)\}"
    ):
        _entry(("a", "USDC", "-1"))
    j.add([_hold("w1", "100")])
    ledger.session = session
    with pytest.raises(entries.NegativeBalance, match=r"\['transfer_hold'\] would overdraw an account"):
        await j.apply(session)  # type: ignore[arg-type]


def test_key_refusals_say_why() -> None:
    assert (
        refusal(idempotency.validate_key, None).message == "mutating requests need an Idempotency-Key header"
    )
    assert refusal(idempotency.validate_key, "short").message == (
        "Idempotency-Key must be 8 to 256 printable ASCII characters"
    )


async def test_a_retry_waits_for_the_original_and_replays_it(store: idempotency.IdempotencyStore) -> None:
    # A wait far longer than the original takes: the retry must return when the original
    # completes, not when its wait runs out (the bound below is the setting, not a speed).
    store.wait_s = 5.0
    redis: FakeRedis = store.redis  # type: ignore[assignment]
    name = store.name("ten", "sandbox", "key12345")
    assert await store.begin(name, "fp1") is None
    assert msgspec.json.decode(redis.data[name]) == {"state": "pending", "fp": "fp1", "status": 0, "body": ""}

    async def finish() -> None:
        await asyncio.sleep(0.03)
        await store.complete(name, "fp1", 200, b"ok")

    started = time.monotonic()
    done = asyncio.create_task(finish())
    assert await store.begin(name, "fp1") == idempotency.Replay(200, b"ok")  # waited, then replayed
    assert time.monotonic() - started < store.wait_s
    await done
    err = await _refused(store.begin(name, "fp2"))
    assert err.message == "this Idempotency-Key was used with a different request"
    other = store.name("ten", "sandbox", "key67890")
    await store.begin(other, "fp1")
    err = await _refused(store.begin(other, "fp1"))
    assert err.message == "the original request with this Idempotency-Key is still in flight"


async def test_a_5xx_in_a_batch_does_not_stop_the_others(store: idempotency.IdempotencyStore) -> None:
    redis: FakeRedis = store.redis  # type: ignore[assignment]
    a, b = store.name("t", "sandbox", "aaaaaaaa"), store.name("t", "sandbox", "bbbbbbbb")
    await store.begin(a, "fa")
    await store.begin(b, "fb")
    await store.complete_many([(a, "fa", 500, b"x"), (b, "fb", 201, b"y")])
    assert a not in redis.data and msgspec.json.decode(redis.data[b].partition(b"|")[2])["state"] == "done"


async def test_a_done_record_the_gateway_did_not_sign_is_refused_and_the_request_runs(
    store: idempotency.IdempotencyStore,
) -> None:
    """A replay is trusted only with the gateway's MAC over its name."""
    redis: FakeRedis = store.redis  # type: ignore[assignment]
    name, other = store.name("t", "sandbox", "dddddddd"), store.name("t", "sandbox", "eeeeeeee")
    await store.begin(other, "fp")
    await store.complete(other, "fp", 201, b"theirs")
    before = FORGED.labels("idempotency")._value.get()
    forged = msgspec.json.encode({"state": "done", "fp": "fp", "status": 200, "body": ""})
    for raw in (forged, redis.data[other], b"m1.x|{}", b"\x00garbage"):  # unsigned, copied, broken
        redis.data[name] = raw
        assert await store.begin(name, "fp") is None  # not replayed: this request owns the key
        assert msgspec.json.decode(redis.data[name])["state"] == "pending"
        del redis.data[name]
    assert FORGED.labels("idempotency")._value.get() == before + 4


async def test_a_record_that_expired_between_set_and_get_is_owned_again(
    store: idempotency.IdempotencyStore,
) -> None:
    redis: FakeRedis = store.redis  # type: ignore[assignment]
    name = store.name("t", "sandbox", "cccccccc")
    redis.data[name] = b"{}"
    redis.vanish_once.add(name)
    assert await store.begin(name, "fp9") is None
    assert msgspec.json.decode(redis.data[name])["fp"] == "fp9"  # this request's lease now


def test_what_the_second_make_mutate_left_alive() -> None:
    assert addresses.b58decode(addresses.b58encode(b"\xff")) == b"\xff"  # 8 bits: one byte, not two
    with pytest.raises(ValueError, match="unknown ciphertext version"):
        signing.SecretBox(KeyRing.parse(new_key_setting("k1"))).open(b"\x01garbage", "ctx")
    ring = KeyRing.parse(new_key_setting("k1"))
    mac = CacheMac.parse(new_key_setting("c1"))
    assert idempotency.IdempotencyStore(FakeRedis(), 60, 1.0, ring, mac=mac).lease_ms == 15000  # type: ignore[arg-type]


def test_door_rules_left_alive() -> None:
    from gateway import rules
    from tests.unit.test_door_rules import WALLET, party, refused

    assert refused(rules.check_pair, "chain", "DOGE", "ETH") == (
        "chain",
        "chain must be a chain that offers DOGE; DOGE is not offered on ETH",
    )
    bank = {"payment_rail": "ach", "currency": "USD", "external_account_id": "ext_1", "amount": "1.001"}
    assert refused(rules.transfer_parties, "payout", party(**WALLET), party(**bank)) == (
        "destination.amount",
        'destination.amount must be a decimal string with at most 2 decimal places for USD, like "10.50"',
    )
    # a provider_wallet destination may carry an address: it is not checked as on-chain
    _, dst = rules.transfer_parties(
        "transfer", party(**WALLET), party(**{**WALLET, "address": "somewhere1234567"})
    )
    assert dst.address == "somewhere1234567"


async def test_every_entry_is_linked_into_its_tenants_chain(ledger: FakeLedger) -> None:
    j = journal.Journal()
    other = _deposit("u", D(1), "dep_9")
    cpu_before = CHAIN_CPU._value.get()
    refused = j.add([_hold("w1", "11")], refusable_for="w1")
    j.add([_hold("w1", "2")], refusable_for="w1")
    j.add([other])
    j.add([_hold("w1", "3")], refusable_for="w1")
    await j.apply(SESSION)  # type: ignore[arg-type]
    assert refused.refused
    assert ledger.chain_locks == [[("t", "sandbox"), ("u", "sandbox")]]  # once, in key order
    rows = ledger.entries
    assert [(r["tenant_id"], r["seq"]) for r in rows] == [("t", 1), ("u", 1), ("t", 2)]  # refused: no link
    first = chain.link(
        chain.GENESIS,
        chain.canonical_v2(
            rows[0]["id"],
            "t",
            "sandbox",
            "transfer_hold",
            "tr_1",
            None,
            rows[0]["created_at"],
            [("w1.available", "USDC", D(-2)), ("w1.held", "USDC", D(2))],
            chain.transfer_text(TR_1),
        ),
    )
    assert rows[0]["hash"] == first and rows[2]["hash"] != first
    deposit_link = chain.canonical_v2(
        rows[1]["id"],
        "u",
        "sandbox",
        "deposit",
        None,
        "dep_9",
        rows[1]["created_at"],
        [("ext.u.sandbox.USDC.deposits", "USDC", D(-1)), ("w2.available", "USDC", D(1))],
        None,
    )
    assert rows[1]["hash"] == chain.link(chain.GENESIS, deposit_link)
    assert 0 <= CHAIN_CPU._value.get() - cpu_before < 0.05  # seconds of CPU: small, never negative
    assert ledger.chains == {("t", "sandbox"): (2, rows[2]["hash"]), ("u", "sandbox"): (1, rows[1]["hash"])}
    j.add([_hold("w1", "1")], refusable_for="w1")
    await j.apply(SESSION)  # type: ignore[arg-type]
    assert ledger.entries[-1]["seq"] == 3  # the chain goes on from its head


def test_the_canonical_form_is_the_documented_one() -> None:
    from datetime import UTC, datetime

    stamp = datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC)
    text = chain.canonical(
        "je_1", "ten", "sandbox", "deposit", None, "dep_1", stamp, [("b", D(5)), ("a", D("-5.5"))]
    )
    assert (
        text
        == "v1|je_1|ten|sandbox|deposit||dep_1|2026-01-02T03:04:05.000006Z|a,debit,5.500000;b,credit,5.000000"
    )
    assert (
        chain.link(chain.GENESIS, text)
        == __import__("hashlib").sha256(("0" * 64 + "\n" + text).encode()).hexdigest()
    )

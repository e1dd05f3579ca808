"""The transfer state machine (docs/guides/money.md) without a database: the core's table,
planned paths, the sandbox's steps and magic amounts, and what one transition moves, records
and emits (the repository replaced by a fake that keeps what it was given; the journal handed
in is a real one, never applied). The same transitions against real rows:
tests/inprocess/test_ledger_states.py."""

from __future__ import annotations

import itertools
import logging
import time
from datetime import UTC, datetime
from decimal import Decimal
from types import SimpleNamespace
from typing import Any

import pytest

from common.contracts.base import Ctx
from common.contracts.events import PayoutCreated, PayoutUpdated, TransferCreated, TransferUpdated
from common.errors import ServiceError
from ledger import states
from ledger.config import LedgerConfig
from ledger.core import events
from ledger.core.states import cents, check_path, illegal, is_legal, next_step_s, simulated_next
from ledger.journal import Journal
from ledger.models import Transfer

pytestmark = pytest.mark.unit
D = Decimal

STATES = ["pending", "in_review", "processing", "completed", "failed", "rejected", "returned"]
LEGAL = {
    ("pending", "processing"),
    ("processing", "completed"),
    ("pending", "in_review"),
    ("in_review", "processing"),
    ("in_review", "rejected"),
    ("processing", "failed"),
}


@pytest.mark.parametrize("kind", ["transfer", "payout"])
def test_transition_table_is_exactly_the_contract(kind: str) -> None:
    allowed = LEGAL | ({("completed", "returned")} if kind == "payout" else set())
    for frm, to in itertools.product(STATES, STATES):
        assert is_legal(kind, frm, to) == ((frm, to) in allowed), (kind, frm, to)


def test_a_planned_path_is_checked_step_by_step() -> None:
    """A new transfer's steps are planned in memory (the batch path): each one must be a legal
    transition from the state before it, like a stored row's."""
    check_path("transfer", "pending", ["processing", "completed"])
    check_path("payout", "pending", ["in_review"])
    check_path("payout", "pending", ["processing", "completed", "returned"])
    for kind, path, at in (
        ("transfer", ["completed"], ("pending", "completed")),
        ("transfer", ["processing", "completed", "returned"], ("completed", "returned")),
        ("payout", ["in_review", "completed"], ("in_review", "completed")),
    ):
        with pytest.raises(ServiceError) as refused:
            check_path(kind, "pending", path)
        details = refused.value.details
        assert (details["reason"], details["state"], details["requested_state"]) == (
            "illegal_transition",
            *at,
        )
        assert refused.value.message == f"a {kind} in state {at[0]} cannot become {at[1]}"


def test_an_illegal_transition_is_refused_whole() -> None:
    err = illegal("payout", "failed", "completed")
    assert (err.code, err.status, err.message) == (
        "invalid_request",
        400,
        "a payout in state failed cannot become completed",
    )
    assert err.details == {
        "reason": "illegal_transition",
        "field": "transfer_id",
        "state": "failed",
        "requested_state": "completed",
    }


def test_cents_are_the_fraction_of_the_amount() -> None:
    assert [cents(D(a)) for a in ("3.51", "0.52", "12", "7.000001")] == [
        D("0.51"),
        D("0.52"),
        0,
        D("0.000001"),
    ]


def test_simulator_steps_and_magic_amounts() -> None:
    class T:
        def __init__(self, state: str, amount: str, kind: str = "payout") -> None:
            self.state, self.amount, self.kind = state, Decimal(amount), kind

    assert simulated_next(T("pending", "1.00")) == "processing"
    assert simulated_next(T("processing", "1.00")) == "completed"
    assert simulated_next(T("processing", "3.51")) == "failed"
    assert simulated_next(T("processing", "3.511")) == "completed"
    assert simulated_next(T("processing", "3.52")) == "completed"
    assert simulated_next(T("completed", "3.52")) == "returned"
    assert simulated_next(T("completed", "3.52", "transfer")) is None
    assert simulated_next(T("completed", "3.00")) is None
    assert simulated_next(T("completed", "3.51")) is None
    for state in ("in_review", "failed", "rejected", "returned"):
        assert simulated_next(T(state, "3.52")) is None


LEDGER_CONFIG = LedgerConfig(settle_s=7.5)
SETTLE_S = LEDGER_CONFIG.settle_s


def row(**kw: Any) -> SimpleNamespace:
    base = {"mode": "sandbox", "route": "wallet", "kind": "payout", "amount": D("3.52"), "state": "pending"}
    return SimpleNamespace(**{**base, **kw})


def test_the_simulator_looks_again_after_settle_s_in_sandbox_only() -> None:
    assert next_step_s(row(), "pending", SETTLE_S) == 7.5
    assert next_step_s(row(), "processing", SETTLE_S) == 7.5
    assert next_step_s(row(), "completed", SETTLE_S) == 7.5  # a payout of x.52 comes back
    assert next_step_s(row(amount=D("3.00")), "completed", SETTLE_S) is None
    assert next_step_s(row(kind="transfer"), "completed", SETTLE_S) is None
    for state in ("in_review", "failed", "rejected", "returned"):
        assert next_step_s(row(), state, SETTLE_S) is None
    assert next_step_s(row(mode="production"), "pending", SETTLE_S) is None
    assert next_step_s(row(route="book"), "pending", SETTLE_S) is None
    assert next_step_s(row(route="external"), "processing", SETTLE_S) == 7.5


# ---- one transition, its money, its record and its event ----

STAMP = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def transfer(**kw: Any) -> Transfer:
    base: dict[str, Any] = {
        "id": "tr_1",
        "tenant_id": "ten_1",
        "mode": "sandbox",
        "kind": "transfer",
        "route": "wallet",
        "state": "processing",
        "previous_state": None,
        "amount": D("10"),
        "fee_amount": D("0"),
        "currency": "USDC",
        "source_wallet_id": "wal_s",
        "destination_wallet_id": "wal_d",
        "source": {"payment_rail": "provider_wallet"},
        "destination": {"payment_rail": "provider_wallet"},
        "developer_fee": None,
        "idempotency_key": "k-1",
        "created_at": STAMP,
        "updated_at": STAMP,
    }
    return Transfer(**{**base, **kw})


class FakeStore:
    """What transition hands the repository, and the journal it posts to."""

    def __init__(self) -> None:
        self.journal = Journal()
        self.set: list[tuple[Any, ...]] = []
        self.recorded: list[tuple[Any, ...]] = []
        self.locked: list[tuple[Any, ...]] = []
        self.found: Transfer | None = transfer()
        self.row = transfer()

    async def set_state(
        self, session: Any, tid: str, to: str, previous: str, next_s: float | None
    ) -> Transfer:
        self.set.append((session, tid, to, previous, next_s))
        return self.row.model_copy(update={"id": tid, "state": to, "previous_state": previous})

    async def record_state_change(self, session: Any, *args: Any) -> None:
        self.recorded.append((session, *args))

    async def lock_transfer(self, session: Any, *args: Any) -> Transfer | None:
        self.locked.append((session, *args))
        return self.found


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch) -> FakeStore:
    fake = FakeStore()
    for name in ("set_state", "record_state_change", "lock_transfer"):
        monkeypatch.setattr(states.repo, name, getattr(fake, name))
    return fake


SESSION = object()


async def go(store: FakeStore, t: Transfer, to: str, **kw: Any) -> tuple[Transfer, Any]:
    store.row = t
    return await states.transition(
        SESSION, store.journal, t, to, cause="test", ledger_config=LEDGER_CONFIG, **kw
    )  # type: ignore[arg-type]


def postings(store: FakeStore) -> tuple[str, list[tuple[str, str, Decimal]]]:
    [move] = store.journal.movements
    [e] = move.entries
    assert move.refusable_for is None  # a transition's money may never be refused
    assert (e.tenant_id, e.mode, e.transfer_id) == ("ten_1", "sandbox", "tr_1")
    return e.kind, e.postings


async def test_completion_pays_the_destination_wallet_less_the_fee(store: FakeStore) -> None:
    new, event = await go(store, transfer(fee_amount=D("0.25")), "completed", request_id="req_1")
    assert postings(store) == (
        "transfer_completed",
        [
            ("wal_s.held", "USDC", D("-10")),
            ("wal_d.available", "USDC", D("9.75")),
            ("ext.ten_1.sandbox.USDC.fees", "USDC", D("0.25")),
        ],
    )
    assert store.set == [(SESSION, "tr_1", "completed", "processing", None)]
    assert store.recorded == [(SESSION, "tr_1", "processing", "completed", "test", "req_1")]
    assert (new.state, new.previous_state) == ("completed", "processing")
    assert isinstance(event, TransferUpdated)
    assert (event.tenant_id, event.mode, event.request_id) == ("ten_1", "sandbox", "req_1")
    assert event.event_id.startswith("evt_")
    assert abs(datetime.fromisoformat(event.created_at).timestamp() - time.time()) < 60
    assert event.data["state"] == "completed" and event.data["previous_state"] == "processing"


async def test_a_completed_withdrawal_leaves_for_the_settlement_account(store: FakeStore) -> None:
    await go(store, transfer(route="external", destination_wallet_id=None), "completed")
    assert postings(store)[1][1] == ("ext.ten_1.sandbox.USDC.settlement", "USDC", D("10"))


async def test_a_completed_payout_leaves_for_the_payouts_account(store: FakeStore) -> None:
    _, event = await go(store, transfer(kind="payout", destination_wallet_id=None), "completed")
    assert postings(store) == (
        "payout_completed",
        [("wal_s.held", "USDC", D("-10")), ("ext.ten_1.sandbox.USDC.payouts", "USDC", D("10"))],
    )
    assert isinstance(event, PayoutUpdated)


@pytest.mark.parametrize(("frm", "to"), [("processing", "failed"), ("in_review", "rejected")])
async def test_a_failed_or_rejected_transfer_gives_the_held_funds_back(
    store: FakeStore, frm: str, to: str
) -> None:
    await go(store, transfer(state=frm), to)
    assert postings(store) == (
        f"transfer_{to}",
        [("wal_s.held", "USDC", D("-10")), ("wal_s.available", "USDC", D("10"))],
    )


async def test_a_returned_payout_credits_the_amount_and_the_fee_back(store: FakeStore) -> None:
    await go(store, transfer(kind="payout", state="completed", fee_amount=D("0.5")), "returned")
    assert postings(store) == (
        "payout_returned",
        [
            ("ext.ten_1.sandbox.USDC.payouts", "USDC", D("-9.5")),
            ("wal_s.available", "USDC", D("10")),
            ("ext.ten_1.sandbox.USDC.fees", "USDC", D("-0.5")),
        ],
    )


async def test_a_returned_payout_without_a_fee_touches_no_fee_balance(store: FakeStore) -> None:
    await go(store, transfer(kind="payout", state="completed"), "returned")
    assert postings(store)[1] == [
        ("ext.ten_1.sandbox.USDC.payouts", "USDC", D("-10")),
        ("wal_s.available", "USDC", D("10")),
    ]


@pytest.mark.parametrize(("frm", "to"), [("pending", "processing"), ("pending", "in_review")])
async def test_a_step_that_moves_no_money_posts_nothing(store: FakeStore, frm: str, to: str) -> None:
    await go(store, transfer(state=frm), to)
    assert store.journal.movements == []
    assert store.set == [(SESSION, "tr_1", to, frm, 7.5 if to == "processing" else None)]


async def test_an_illegal_transition_changes_nothing_and_is_logged(
    store: FakeStore, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="ledger.states"), pytest.raises(ServiceError) as err:
        await go(store, transfer(state="failed"), "completed")
    assert err.value.details == {
        "reason": "illegal_transition",
        "field": "transfer_id",
        "state": "failed",
        "requested_state": "completed",
    }
    assert (store.journal.movements, store.set, store.recorded) == ([], [], [])
    assert caplog.messages == ["illegal transition refused: transfer tr_1 failed -> completed (test)"]


async def test_a_transition_is_logged(store: FakeStore, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="ledger.states"):
        await go(store, transfer(), "failed")
    assert caplog.messages == ["transfer tr_1: processing -> failed (test)"]


def test_created_events_carry_the_view_and_the_extra_fields() -> None:
    fee = transfer(developer_fee={"flat_amount": "0.01"}, fee_amount=D("0.01"))
    event = events.transfer_event(fee, (PayoutCreated, TransferCreated), "req_9", note="x")
    assert isinstance(event, TransferCreated) and event.request_id == "req_9"
    assert abs(datetime.fromisoformat(event.created_at).timestamp() - time.time()) < 60
    assert event.data["note"] == "x" and event.data["developer_fee_amount"] == "0.01"
    assert event.data["transfer_id"] == "tr_1" and event.data["amount"] == "10.00"
    payout = events.transfer_event(transfer(kind="payout"), (PayoutCreated, TransferCreated), None)
    assert isinstance(payout, PayoutCreated) and payout.request_id is None


@pytest.mark.parametrize(
    ("ctx", "args"),
    [
        (Ctx(request_id="r", tenant_id="ten_1", mode="sandbox"), ("tr_1", "ten_1", "sandbox")),
        (Ctx(request_id="r", tenant_id="ten_1", mode="sandbox", actor="op"), ("tr_1", "ten_1")),
        (Ctx(request_id="r", tenant_id="", mode="sandbox", actor="op"), ("tr_1", None)),
    ],
)
async def test_an_operator_acts_across_tenants_a_tenant_in_its_mode(
    store: FakeStore, ctx: Ctx, args: tuple[Any, ...]
) -> None:
    assert await states.lock_for_operator(SESSION, "tr_1", ctx) is store.found  # type: ignore[arg-type]
    assert store.locked == [(SESSION, *args)]


async def test_an_unknown_transfer_is_not_found(store: FakeStore) -> None:
    store.found = None
    with pytest.raises(ServiceError) as err:
        await states.lock_for_operator(SESSION, "tr_x", Ctx(request_id="r", tenant_id="t", mode="sandbox"))  # type: ignore[arg-type]
    assert (err.value.code, err.value.details) == ("not_found", {"field": "transfer_id"})
    assert err.value.message == "transfer not found"

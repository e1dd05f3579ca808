"""A batch of transfers decided in memory (``ledger.core.transfers``), one rule at a time: what
a replay answers and refuses, what a refusal says (its code, its message, its field), the row,
steps and movement planned for each route (book, payout, withdrawal), and how a twin answers
when its first was refused, committed concurrently, or committed with other terms.

The whole batch end to end, with the funds check between plan and settle:
tests/unit/test_ledger_core.py (whose commands, wallets and rows these tests reuse).
"""

from __future__ import annotations

from decimal import Decimal

import msgspec
import pytest

from common.contracts.commands import CreateTransfer, Party
from common.errors import ErrorCode, ServiceError
from ledger.core.effects import Effects
from ledger.core.entries import check_funds
from ledger.core.transfers import (
    Planned,
    Replayed,
    Twin,
    answer,
    checked_amount,
    lost_to_twins,
    movements,
    plan_transfers,
    replay,
    replay_concurrent,
    settle_transfers,
    transfer_id_reused,
)
from tests.unit.test_ledger_core import BALANCES, NOW, SETTLE_S, WALLETS, Wallet, book, payout, stored

pytestmark = pytest.mark.unit
D = Decimal

#: An address no wallet of the tenant holds, valid on BASE (an EVM chain): a withdrawal.
OUTSIDE = "0x" + "ab" * 20
#: A EURC wallet beside the USDC ones: EURC pays out in EUR, but is no transfer currency.
EURC_WALLETS = [*WALLETS, Wallet("wal_e", symbol="EURC"), Wallet("wal_f", symbol="EURC")]


def withdrawal(transfer_id: str, src: str, amount: str, key: str, chain: str | None = None) -> CreateTransfer:
    cmd = book(transfer_id, src, "unused", amount, key)
    to = Party(payment_rail="stablecoin", currency="USDC", address=OUTSIDE, chain=chain)
    return msgspec.structs.replace(cmd, destination=to)


def eurc(cmd: CreateTransfer, dst: Party | None = None) -> CreateTransfer:
    """``cmd`` moving EURC from wal_e (to ``dst``, or to wal_f)."""
    source = msgspec.structs.replace(cmd.source, currency="EURC", provider_wallet_id="wal_e")
    dst = dst or msgspec.structs.replace(cmd.destination, currency="EURC", provider_wallet_id="wal_f")
    return msgspec.structs.replace(cmd, source=source, destination=dst, currency="EURC")


def refused(outcome: object) -> ServiceError:
    assert isinstance(outcome, ServiceError), outcome
    return outcome


def planned(outcome: object) -> Planned:
    assert isinstance(outcome, Planned), outcome
    return outcome


# ---- replays and refusals: what each answer says ----


def test_a_replay_answers_the_recorded_transfer_as_a_read_of_it() -> None:
    old = stored()
    effects = replay(old, book("tr_5", "wal_c", "wal_a", "3", "key-old"), D(3))
    assert effects.status == 201 and effects.events == []
    assert effects.data["transfer_id"] == "tr_old" and effects.data["amount"] == "3.00"
    assert answer(old).status == 201 and answer(old).data == effects.data


@pytest.mark.parametrize(
    ("change", "amount"),
    [
        ({}, D(4)),  # another amount
        ({"kind": "payout"}, D(3)),  # another kind
        ({"currency": "USDT"}, D(3)),  # another currency
    ],
)
def test_a_replay_with_other_terms_is_refused_naming_the_recorded_transfer(
    change: dict[str, str], amount: Decimal
) -> None:
    cmd = msgspec.structs.replace(book("tr_5", "wal_c", "wal_a", str(amount), "key-old"), **change)
    with pytest.raises(ServiceError) as caught:
        replay(stored(), cmd, amount)
    err = caught.value
    assert err.code == ErrorCode.IDEMPOTENCY_REPLAY_MISMATCH
    assert err.message == "idempotency_key was already used for a different operation"
    assert err.details == {"field": "idempotency_key", "transfer_id": "tr_old"}


def test_a_reused_transfer_id_is_refused_naming_the_id_and_its_field() -> None:
    err = transfer_id_reused("tr_9")
    assert err.code == ErrorCode.FORBIDDEN
    assert err.message == "transfer id tr_9 already names another transfer"
    assert err.details == {"reason": "transfer_id_reused", "field": "transfer_id"}
    # in a batch: the id the command names, recorded before or planned earlier
    cmds = [book("tr_old", "wal_a", "wal_b", "1", "key-1"), book("tr_4", "wal_a", "wal_b", "1", "key-4")]
    cmds.append(book("tr_4", "wal_a", "wal_b", "1", "key-5"))
    prepared = plan_transfers(cmds, [], WALLETS, SETTLE_S, NOW, {"tr_old"})
    assert refused(prepared[0]).message == "transfer id tr_old already names another transfer"
    assert refused(prepared[2]).message == "transfer id tr_4 already names another transfer"
    assert refused(prepared[2]).details == {"reason": "transfer_id_reused", "field": "transfer_id"}


def test_a_command_without_a_compliance_decision_moves_nothing() -> None:
    cmd = msgspec.structs.replace(book("tr_1", "wal_a", "wal_b", "1", "key-1"), decision=None)
    with pytest.raises(ServiceError) as caught:
        checked_amount(cmd)
    err = caught.value
    assert err.code == ErrorCode.FORBIDDEN
    assert err.message == "the command carries no compliance decision"
    assert err.details == {"reason": "compliance_decision_missing"}


@pytest.mark.parametrize(
    ("amount", "message"),
    [
        ("abc", "amount must be a decimal string"),
        ("0", "amount must be greater than zero"),
        ("1.0000001", "amount has more than 6 decimal places"),
    ],
)
def test_an_amount_is_refused_on_source_amount(amount: str, message: str) -> None:
    cmd = book("tr_1", "wal_a", "wal_b", amount, "key-1")
    with pytest.raises(ServiceError) as caught:
        checked_amount(cmd)
    assert caught.value.details == {"field": "source.amount"} and caught.value.message == message
    [out] = plan_transfers([cmd], [], WALLETS, SETTLE_S, NOW)
    assert refused(out).details == {"field": "source.amount"}
    assert checked_amount(book("tr_1", "wal_a", "wal_b", "1.000001", "key-1")) == D("1.000001")


# ---- parties: currency, route ----


def test_a_source_in_another_currency_than_the_transfers_is_refused() -> None:
    cmd = book("tr_1", "wal_a", "wal_b", "1", "key-1")
    cmd = msgspec.structs.replace(cmd, source=msgspec.structs.replace(cmd.source, currency="USDT"))
    [out] = plan_transfers([cmd], [], WALLETS, SETTLE_S, NOW)
    err = refused(out)
    assert err.code == ErrorCode.INVALID_REQUEST
    assert err.message == "currency must be the source currency"
    assert err.details == {"field": "source.currency"}
    # the source's currency is compared uppercase (the gateway normalises it)
    lower = msgspec.structs.replace(cmd, source=msgspec.structs.replace(cmd.source, currency="usdc"))
    assert isinstance(plan_transfers([lower], [], WALLETS, SETTLE_S, NOW)[0], Planned)


def test_a_transfer_moves_usdc_or_usdt_while_a_payout_may_pay_out_eurc() -> None:
    [out] = plan_transfers(
        [eurc(book("tr_1", "wal_a", "wal_b", "1", "key-1"))], [], EURC_WALLETS, SETTLE_S, NOW
    )
    err = refused(out)
    assert err.code == ErrorCode.INVALID_REQUEST
    assert err.message == "transfers move USDC or USDT"
    assert err.details == {"field": "source.currency"}

    sepa = Party(payment_rail="sepa", currency="EUR", external_account_id="ext_acct_2")
    [out] = plan_transfers(
        [eurc(payout("tr_2", "wal_a", "1", "key-2"), sepa)], [], EURC_WALLETS, SETTLE_S, NOW
    )
    p = planned(out)
    assert (p.values["route"], p.values["currency"], p.values["source_wallet_id"]) == (
        "payout",
        "EURC",
        "wal_e",
    )
    assert p.values["destination_wallet_id"] is None


def test_a_withdrawal_leaves_the_suite_from_its_held_funds() -> None:
    [out] = plan_transfers(
        [withdrawal("tr_1", "wal_a", "2", "key-1", chain="BASE")], [], WALLETS, SETTLE_S, NOW
    )
    p = planned(out)
    assert (p.values["kind"], p.values["route"], p.values["state"]) == ("transfer", "external", "pending")
    assert p.values["destination_wallet_id"] is None and p.values["source_wallet_id"] == "wal_a"
    assert p.values["destination"] == {
        "payment_rail": "stablecoin",
        "currency": "USDC",
        "chain": "BASE",
        "address": OUTSIDE,
    }
    [made] = p.move.entries
    assert made.kind == "transfer_hold"
    assert made.postings == [("wal_a.available", "USDC", D(-2)), ("wal_a.held", "USDC", D(2))]
    assert p.steps == [] and p.changes == []


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"chain": "SOL"}, "destination.chain", "a withdrawal stays on the source wallet's chain"),
        ({"currency": "USDT"}, "destination.currency", "source and destination currency must match"),
        ({"address": "0x" + "ab" * 19}, "destination.address", "an EVM address is 0x followed by 40"),
    ],
)
def test_a_withdrawal_is_checked_against_its_source_wallet(
    change: dict[str, str], field: str, message: str
) -> None:
    cmd = withdrawal("tr_1", "wal_a", "2", "key-1")
    cmd = msgspec.structs.replace(cmd, destination=msgspec.structs.replace(cmd.destination, **change))
    [out] = plan_transfers([cmd], [], WALLETS, SETTLE_S, NOW)
    err = refused(out)
    assert err.details == {"field": field} and err.message.startswith(message)


def test_a_stablecoin_destination_a_wallet_of_the_tenant_holds_is_no_withdrawal() -> None:
    cmd = withdrawal("tr_1", "wal_a", "2", "key-1")
    cmd = msgspec.structs.replace(
        cmd, destination=msgspec.structs.replace(cmd.destination, address="addr_wal_b")
    )
    p = planned(plan_transfers([cmd], [], WALLETS, SETTLE_S, NOW)[0])
    assert (p.values["route"], p.values["destination_wallet_id"]) == ("onchain", "wal_b")


# ---- the planned row, steps and movement ----


def test_a_payouts_row_is_planned_whole_at_pending() -> None:
    p = planned(plan_transfers([payout("tr_9", "wal_a", "1.5", "key-9")], [], WALLETS, SETTLE_S, NOW)[0])
    assert p.values == {
        "id": "tr_9",
        "tenant_id": "ten_1",
        "mode": "sandbox",
        "kind": "payout",
        "route": "payout",
        "state": "pending",
        "previous_state": None,
        "amount": D("1.5"),
        "fee_amount": D(0),
        "currency": "USDC",
        "source_wallet_id": "wal_a",
        "destination_wallet_id": None,
        "source": {"payment_rail": "provider_wallet", "currency": "USDC", "provider_wallet_id": "wal_a"},
        "destination": {"payment_rail": "ach", "currency": "USD", "external_account_id": "ext_acct_1"},
        "developer_fee": None,
        "idempotency_key": "key-9",
        "decision_id": "dec_tr_9",
        "created_at": NOW,
        "updated_at": NOW,
        "next_step_at": NOW.replace(second=9),
    }
    assert (p.amount, p.request_id, p.steps, p.changes) == (D("1.5"), "req_tr_9", [], [])
    [made] = p.move.entries
    assert (made.tenant_id, made.mode, made.kind, made.transfer_id) == (
        "ten_1",
        "sandbox",
        "payout_hold",
        "tr_9",
    )
    assert made.postings == [("wal_a.available", "USDC", D("-1.5")), ("wal_a.held", "USDC", D("1.5"))]
    assert p.move.refusable_for == "wal_a" and not p.move.refused
    [created] = p.events
    assert created.data["state"] == "pending" and created.request_id == "req_tr_9"


def test_a_book_transfer_names_its_destination_and_settles_in_one_entry() -> None:
    p = planned(
        plan_transfers([book("tr_1", "wal_a", "wal_b", "2", "key-1", fee="0.5")], [], WALLETS, SETTLE_S, NOW)[
            0
        ]
    )
    assert (p.values["destination_wallet_id"], p.values["developer_fee"]) == ("wal_b", {"flat_amount": "0.5"})
    assert p.values["source"] == {
        "payment_rail": "provider_wallet",
        "currency": "USDC",
        "provider_wallet_id": "wal_a",
    }
    assert p.values["destination"] == {
        "payment_rail": "provider_wallet",
        "currency": "USDC",
        "provider_wallet_id": "wal_b",
    }
    [made] = p.move.entries
    assert (made.tenant_id, made.mode, made.kind) == ("ten_1", "sandbox", "transfer_completed")
    assert made.postings == [
        ("wal_a.available", "USDC", D(-2)),
        ("wal_b.available", "USDC", D("1.5")),
        ("ext.ten_1.sandbox.USDC.fees", "USDC", D("0.5")),
    ]
    assert p.changes == [
        {
            "transfer_id": "tr_1",
            "from_state": "pending",
            "to_state": "processing",
            "cause": "book_settlement",
            "request_id": "req_tr_1",
        },
        {
            "transfer_id": "tr_1",
            "from_state": "processing",
            "to_state": "completed",
            "cause": "book_settlement",
            "request_id": "req_tr_1",
        },
    ]


def test_a_transfer_in_review_holds_its_funds_and_records_its_step() -> None:
    p = planned(
        plan_transfers([payout("tr_4", "wal_a", "1", "key-4", outcome="review")], [], WALLETS, SETTLE_S, NOW)[
            0
        ]
    )
    assert (p.values["state"], p.values["previous_state"], p.values["next_step_at"]) == (
        "in_review",
        "pending",
        None,
    )
    assert p.changes == [
        {
            "transfer_id": "tr_4",
            "from_state": "pending",
            "to_state": "in_review",
            "cause": "compliance_review",
            "request_id": "req_tr_4",
        }
    ]
    assert [e.kind for e in p.move.entries] == ["payout_hold"]


# ---- lost to a concurrent transaction; twins ----


def test_only_the_planned_transfers_the_lock_statement_did_not_insert_are_lost() -> None:
    cmds = [
        book("tr_1", "wal_a", "wal_b", "1", "key-1"),  # planned, inserted
        msgspec.structs.replace(book("tr_2", "wal_a", "wal_b", "1", "key-2"), decision=None),  # refused
        book("tr_3", "wal_a", "wal_b", "1", "key-old"),  # a replay (Effects)
        book("tr_4", "wal_a", "wal_b", "1", "key-1"),  # a twin of tr_1
        book("tr_5", "wal_a", "wal_b", "1", "key-5"),  # planned, not inserted
    ]
    prepared = plan_transfers(cmds, [stored(amount=D(1))], WALLETS, SETTLE_S, NOW)
    assert [type(p).__name__ for p in prepared] == ["Planned", "ServiceError", "Effects", "Twin", "Planned"]
    lost = lost_to_twins(prepared, inserted={"tr_1"})
    assert list(lost) == [4] and lost[4] is prepared[4]
    assert lost_to_twins(prepared, inserted={"tr_1", "tr_5"}) == {}


def test_a_transfer_lost_to_a_concurrent_one_with_other_terms_is_refused_as_a_mismatch() -> None:
    prepared = plan_transfers([book("tr_1", "wal_a", "wal_b", "4", "key-old")], [], WALLETS, SETTLE_S, NOW)
    replay_concurrent(prepared, lost_to_twins(prepared, inserted=set()), [stored()])  # committed with 3
    [lost] = prepared
    assert isinstance(lost, Replayed) and lost.row.id == "tr_old"
    err = refused(lost.outcome)
    assert err.code == ErrorCode.IDEMPOTENCY_REPLAY_MISMATCH
    assert err.details == {"field": "idempotency_key", "transfer_id": "tr_old"}
    settled = settle_transfers(prepared)
    assert settled.answers == [err] and settled.refused == [] and settled.changes == []


def test_a_twin_of_a_transfer_lost_to_a_concurrent_one_answers_the_row_committed() -> None:
    cmds = [
        book("tr_1", "wal_a", "wal_b", "3", "key-old"),
        book("tr_2", "wal_a", "wal_b", "3", "key-old"),  # the same terms: a replay of tr_old
        book("tr_3", "wal_a", "wal_b", "5", "key-old"),  # other terms: refused
    ]
    prepared = plan_transfers(cmds, [], WALLETS, SETTLE_S, NOW)
    assert isinstance(prepared[1], Twin) and prepared[1].first == 0
    replay_concurrent(prepared, lost_to_twins(prepared, inserted=set()), [stored()])
    assert isinstance(prepared[0], Replayed) and isinstance(prepared[1], Twin)
    answers = settle_transfers(prepared).answers
    assert isinstance(answers[0], Effects) and isinstance(answers[1], Effects)
    assert answers[1].status == 201 and answers[1].data == answers[0].data
    assert answers[1].data["transfer_id"] == "tr_old" and answers[1].data["amount"] == "3.00"
    err = refused(answers[2])
    assert err.code == ErrorCode.IDEMPOTENCY_REPLAY_MISMATCH
    assert err.details == {"field": "idempotency_key", "transfer_id": "tr_old"}


def test_a_settled_batch_answers_each_accepted_transfer_with_its_event() -> None:
    cmds = [book("tr_1", "wal_a", "wal_b", "2", "key-1"), book("tr_2", "wal_a", "wal_b", "2", "key-1")]
    prepared = plan_transfers(cmds, [], WALLETS, SETTLE_S, NOW)
    check_funds(movements(prepared), BALANCES)
    settled = settle_transfers(prepared)
    first, twin = settled.answers
    assert isinstance(first, Effects) and isinstance(twin, Effects)
    assert (first.status, twin.status) == (201, 201)
    assert first.events == planned(prepared[0]).events and twin.events == []
    assert twin.data == first.data and first.data["state"] == "completed"

"""The ledger's decisions driven whole through its core (``ledger.core``), with no row, no
session and no database: plain objects stand for what the batch's statements would have read,
and the test reads what the core decided to write and to answer.

A batch of transfers goes from its commands to its answers as the shell runs it
(``service.execute_writes``): planned from the wallets and known keys read
(``plan_transfers``), its movements checked in batch order on the balances read
(``check_funds``), then settled (``settle_transfers``). A stored transfer's state changes
decide their money the same way (``states.transition_entry``). The same batches against the
stack: tests/integration/test_ledger_batch.py and test_ledger_money.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from types import SimpleNamespace
from typing import Any

import msgspec
import pytest

from common.contracts.base import Ctx, Decision
from common.contracts.commands import CreateTransfer, DeveloperFee, Party
from common.contracts.events import TransferCreated
from common.errors import ServiceError
from ledger.core import chain
from ledger.core.effects import Effects
from ledger.core.entries import Movement, check_funds, plan_locks
from ledger.core.states import transition_entry
from ledger.core.transfers import (
    Planned,
    Replayed,
    Twin,
    lost_to_twins,
    movements,
    new_rows,
    plan_transfers,
    replay_concurrent,
    settle_transfers,
)

pytestmark = pytest.mark.unit
D = Decimal
NOW = datetime(2026, 3, 4, 5, 6, 7, 890123, tzinfo=UTC)
SETTLE_S = 2.0


@dataclass(frozen=True)
class Wallet:
    """A wallet as the batch's first statement reads it; no table behind it."""

    id: str
    customer_id: str = "cus_1"
    tenant_id: str = "ten_1"
    mode: str = "sandbox"
    symbol: str = "USDC"
    chain: str = "BASE"

    @property
    def deposit_address(self) -> str:
        return f"addr_{self.id}"


WALLETS = [Wallet("wal_a"), Wallet("wal_b"), Wallet("wal_c")]
#: The balances the lock statement would read: wal_a holds 10 USDC, the others nothing.
BALANCES = {f"{w}.{side}": D(0) for w in ("wal_a", "wal_b", "wal_c") for side in ("available", "held")} | {
    "wal_a.available": D(10)
}


def book(
    transfer_id: str, src: str, dst: str, amount: str, key: str, fee: str | None = None
) -> CreateTransfer:
    return CreateTransfer(
        command_id=f"cmd_{transfer_id}",
        ctx=Ctx(request_id=f"req_{transfer_id}", tenant_id="ten_1", mode="sandbox"),
        decision=Decision(decision_id=f"dec_{transfer_id}", outcome="allow", rule="ok"),
        transfer_id=transfer_id,
        kind="transfer",
        source=Party(payment_rail="provider_wallet", currency="USDC", provider_wallet_id=src),
        destination=Party(payment_rail="provider_wallet", currency="USDC", provider_wallet_id=dst),
        amount=amount,
        currency="USDC",
        idempotency_key=key,
        developer_fee=DeveloperFee(flat_amount=fee) if fee else None,
    )


def payout(transfer_id: str, src: str, amount: str, key: str, outcome: str = "allow") -> CreateTransfer:
    return CreateTransfer(
        command_id=f"cmd_{transfer_id}",
        ctx=Ctx(request_id=f"req_{transfer_id}", tenant_id="ten_1", mode="sandbox"),
        decision=Decision(decision_id=f"dec_{transfer_id}", outcome=outcome, rule="ok"),  # type: ignore[arg-type]
        transfer_id=transfer_id,
        kind="payout",
        source=Party(payment_rail="provider_wallet", currency="USDC", provider_wallet_id=src),
        destination=Party(payment_rail="ach", currency="USD", external_account_id="ext_acct_1"),
        amount=amount,
        currency="USDC",
        idempotency_key=key,
    )


def stored(**over: Any) -> SimpleNamespace:
    """A transfer recorded before this batch, as the claim statement reads it."""
    row = {
        "id": "tr_old",
        "tenant_id": "ten_1",
        "mode": "sandbox",
        "kind": "transfer",
        "route": "book",
        "state": "completed",
        "previous_state": "processing",
        "amount": D(3),
        "fee_amount": D(0),
        "currency": "USDC",
        "source_wallet_id": "wal_c",
        "destination_wallet_id": "wal_a",
        "source": {},
        "destination": {},
        "developer_fee": None,
        "idempotency_key": "key-old",
        "created_at": NOW,
        "updated_at": NOW,
    }
    return SimpleNamespace(**(row | over))


def refusal(outcome: Effects | ServiceError) -> tuple[str, str | None]:
    assert isinstance(outcome, ServiceError), outcome.data if isinstance(outcome, Effects) else outcome
    return outcome.code, outcome.details.get("reason")


def test_a_batch_with_fees_an_overdraft_a_twin_a_review_and_replays_is_decided_end_to_end() -> None:
    cmds = [
        book("tr_1", "wal_a", "wal_b", "6", "key-1", fee="0.5"),  # 6 of wal_a's 10: accepted
        book("tr_2", "wal_a", "wal_b", "5", "key-2"),  # 4 left: refused alone
        book("tr_3", "wal_a", "wal_b", "6", "key-1", fee="0.5"),  # tr_1's key: its twin
        payout("tr_4", "wal_b", "5.5", "key-4", outcome="review"),  # what tr_1 paid wal_b, held
        book("tr_5", "wal_c", "wal_a", "3", "key-old"),  # recorded before: answered again
        book("tr_6", "wal_c", "wal_a", "4", "key-old"),  # recorded before with 3: refused
        msgspec.structs.replace(book("tr_7", "wal_a", "wal_b", "1", "key-7"), decision=None),
        book("tr_8", "wal_a", "wal_z", "1", "key-8"),  # a wallet the batch did not find
    ]
    prepared = plan_transfers(cmds, [stored()], WALLETS, SETTLE_S, NOW)
    assert [type(p).__name__ for p in prepared] == [
        "Planned",
        "Planned",
        "Twin",
        "Planned",
        "Effects",
        "ServiceError",
        "ServiceError",
        "ServiceError",
    ]
    assert [row["id"] for row in new_rows(prepared)] == ["tr_1", "tr_2", "tr_4"]
    locks = plan_locks(movements(prepared))
    # A book transfer settles at once, from the available balance: its source's held balance
    # is neither locked nor moved; the payout in review holds.
    assert sorted(locks.wallet_accounts) == ["wal_a.available", "wal_b.available", "wal_b.held"]
    assert sorted(locks.externals) == ["ext.ten_1.sandbox.USDC.fees"]

    funded = check_funds(movements(prepared), BALANCES)
    # tr_1: 6 settled in one entry, 5.5 to wal_b and 0.5 to the fees; tr_4 holds those 5.5.
    assert funded.deltas == {
        "wal_a.available": D(-6),
        "wal_b.available": D(0),
        "wal_b.held": D("5.5"),
    }
    assert [e.kind for e in funded.accepted] == ["transfer_completed", "payout_hold"]
    assert funded.accepted[0].postings == [
        ("wal_a.available", "USDC", D(-6)),
        ("wal_b.available", "USDC", D("5.5")),
        ("ext.ten_1.sandbox.USDC.fees", "USDC", D("0.5")),
    ]
    assert BALANCES["wal_a.available"] == D(10)  # the balances read are left as read

    settled = settle_transfers(prepared)
    assert settled.refused == ["tr_2"]
    assert [(c["transfer_id"], c["from_state"], c["to_state"], c["cause"]) for c in settled.changes] == [
        ("tr_1", "pending", "processing", "book_settlement"),
        ("tr_1", "processing", "completed", "book_settlement"),
        ("tr_4", "pending", "in_review", "compliance_review"),
    ]
    answers = settled.answers
    shown = ("transfer_id", "state", "provider", "amount", "currency", "idempotency_key")
    # each the whole transfer, as a read of it answers (ledger.core.events.transfer_view)
    assert [{k: a.data[k] for k in shown} for a in (answers[0], answers[2], answers[3], answers[4])] == [  # type: ignore[union-attr]
        {
            "transfer_id": "tr_1",
            "state": "completed",
            "provider": "service",
            "amount": "6.00",
            "currency": "USDC",
            "idempotency_key": "key-1",
        },
        {
            "transfer_id": "tr_1",
            "state": "completed",
            "provider": "service",
            "amount": "6.00",
            "currency": "USDC",
            "idempotency_key": "key-1",
        },  # the twin: tr_1's answer
        {
            "transfer_id": "tr_4",
            "state": "in_review",
            "provider": "service",
            "amount": "5.50",
            "currency": "USDC",
            "idempotency_key": "key-4",
        },
        {
            "transfer_id": "tr_old",
            "state": "completed",
            "provider": "service",
            "amount": "3.00",
            "currency": "USDC",
            "idempotency_key": "key-old",
        },
    ]
    assert answers[0].data == answers[2].data and answers[0].data["developer_fee_amount"] == "0.50"  # type: ignore[union-attr]
    assert refusal(answers[1]) == ("invalid_request", "insufficient_funds")
    assert answers[1].details["wallet_id"] == "wal_a"  # type: ignore[union-attr]
    assert refusal(answers[5]) == ("idempotency_replay_mismatch", None)
    assert refusal(answers[6]) == ("forbidden", "compliance_decision_missing")
    assert refusal(answers[7]) == ("not_found", None)
    assert answers[2].events == [] and answers[4].events == []  # type: ignore[union-attr]


def test_a_book_transfers_row_and_events_are_decided_with_its_plan() -> None:
    [planned] = plan_transfers(
        [book("tr_1", "wal_a", "wal_b", "6", "key-1", fee="0.5")], [], WALLETS, 7.0, NOW
    )
    assert isinstance(planned, Planned)
    v = planned.values
    assert (v["state"], v["previous_state"], v["route"]) == ("completed", "processing", "book")
    assert (v["amount"], v["fee_amount"], v["next_step_at"]) == (D(6), D("0.5"), None)  # book: settled
    assert v["created_at"] == v["updated_at"] == NOW
    # one event, in the state the transaction commits: nobody could read pending or processing
    [created] = planned.events
    assert isinstance(created, TransferCreated) and created.data["state"] == "completed"
    assert "previous_state" not in created.data
    assert [(c["from_state"], c["to_state"]) for c in planned.changes] == [
        ("pending", "processing"),
        ("processing", "completed"),
    ]
    assert created.data["developer_fee_amount"] == "0.50" and created.request_id == "req_tr_1"
    # every entry covers the transfer's terms in the hash chain
    assert {e.transfer for e in planned.move.entries} == {chain.transfer_text(v)}
    [queued] = plan_transfers([payout("tr_9", "wal_a", "1", "key-9")], [], WALLETS, 7.0, NOW)
    assert isinstance(queued, Planned) and queued.values["state"] == "pending"
    assert queued.values["next_step_at"] == NOW.replace(second=14)  # the sandbox looks again


def test_a_refused_first_refuses_its_twin_and_a_concurrent_twin_answers_the_row_committed() -> None:
    cmds = [book("tr_1", "wal_a", "wal_b", "11", "key-1"), book("tr_2", "wal_a", "wal_b", "11", "key-1")]
    prepared = plan_transfers(cmds, [], WALLETS, SETTLE_S, NOW)
    assert isinstance(prepared[1], Twin)
    check_funds(movements(prepared), BALANCES)
    answers = settle_transfers(prepared).answers
    assert refusal(answers[0]) == refusal(answers[1]) == ("invalid_request", "insufficient_funds")

    prepared = plan_transfers([book("tr_1", "wal_a", "wal_b", "3", "key-old")], [], WALLETS, SETTLE_S, NOW)
    lost = lost_to_twins(prepared, inserted=set())  # the lock statement inserted nothing
    assert list(lost) == [0]
    replay_concurrent(prepared, lost, [stored()])
    assert isinstance(prepared[0], Replayed) and prepared[0].row.id == "tr_old"
    settled = settle_transfers(prepared)
    assert settled.refused == [] and settled.changes == []
    assert settled.answers[0].data["transfer_id"] == "tr_old"  # type: ignore[union-attr]


def test_a_payouts_state_changes_decide_their_money_end_to_end() -> None:
    """A stored payout completes, then comes back: each change's entry, applied on the balances
    read, leaves the wallet where it started, the developer fee included."""
    row = stored(id="tr_p", kind="payout", route="payout", state="processing", amount=D(10), fee_amount=D(1))
    row.source_wallet_id, row.destination_wallet_id = "wal_a", None
    balances = {"wal_a.available": D(0), "wal_a.held": D(10)}
    completed = transition_entry(row, "completed")
    assert completed is not None and completed.kind == "payout_completed"
    assert completed.postings == [
        ("wal_a.held", "USDC", D(-10)),
        ("ext.ten_1.sandbox.USDC.payouts", "USDC", D(9)),
        ("ext.ten_1.sandbox.USDC.fees", "USDC", D(1)),
    ]
    returned = transition_entry(row, "returned")
    assert returned is not None
    assert returned.postings == [
        ("ext.ten_1.sandbox.USDC.payouts", "USDC", D(-9)),
        ("wal_a.available", "USDC", D(10)),
        ("ext.ten_1.sandbox.USDC.fees", "USDC", D(-1)),
    ]
    assert transition_entry(row, "in_review") is None  # a step that moves no money
    funded = check_funds([Movement([completed]), Movement([returned])], balances)
    assert funded.deltas == {"wal_a.held": D(-10), "wal_a.available": D(10)}

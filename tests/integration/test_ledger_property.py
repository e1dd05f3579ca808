"""Property: random sequences of deposits, book and on-chain transfers, payouts, failures and
returns, run through the real service (broker, two ledger instances, the simulator), keep the
books. After every step, in one database snapshot: every journal entry balances, no wallet
account is negative, wallet balances equal their postings, and the total held by all wallets
equals deposits minus completed payouts (returned payouts are credited back). At the end, once
the simulator has settled everything, each wallet holds exactly what a model predicts."""

from __future__ import annotations

import asyncio
import secrets
import uuid
from dataclasses import dataclass
from decimal import Decimal

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from common.contracts.commands import DeveloperFee
from common.fees import developer_fee_amount
from tests.conftest import Stack
from tests.support.ledger import LedgerKit, ledger_invariants, open_kit

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]  # the first test may start the stack

N_WALLETS = 3
TERMINAL = ("completed", "failed", "rejected", "returned")


@dataclass(frozen=True)
class Op:
    kind: str  # deposit | book | onchain | withdraw (out of the suite) | payout
    src: int
    dst: int
    amount: Decimal
    outcome: str = "complete"  # complete | fail | return
    fee_pct: Decimal = Decimal(0)  # developer fee, percent of the amount, charged on completion


def _amount(units: int, outcome: str) -> Decimal:
    cents = {"fail": 51, "return": 52}.get(outcome, units % 50)  # ordinary cents stay below 51
    return Decimal(units // 100) + Decimal(cents) / 100 or Decimal("0.01")


wallet = st.integers(0, N_WALLETS - 1)
units = st.integers(1, 4000)
fee = st.sampled_from([Decimal(0), Decimal("1.5"), Decimal("2.25")])


def _settled(kind: str, outcomes: list[str], to_another_wallet: bool = False) -> st.SearchStrategy[Op]:
    """An op the simulator settles later with one of ``outcomes`` (picked by the amount's
    cents), and a developer fee: to another wallet, or out of the suite (the source itself)."""
    dst = wallet if to_another_wallet else st.none()
    return st.builds(
        lambda s, d, u, o, f: Op(kind, s, s if d is None else d, _amount(u, o), o, f),
        wallet,
        dst,
        units,
        st.sampled_from(outcomes),
        fee,
    )


ops = st.one_of(
    st.builds(lambda w, u: Op("deposit", w, w, _amount(u, "complete") + 5), wallet, units),
    st.builds(
        lambda s, d, u, f: Op("book", s, d, _amount(u, "complete"), fee_pct=f), wallet, wallet, units, fee
    ),
    _settled("onchain", ["complete", "fail"], to_another_wallet=True),
    _settled("withdraw", ["complete", "fail"]),
    _settled("payout", ["complete", "fail", "return"]),
)


async def books_balance(kit: LedgerKit) -> Decimal:
    """Every unit deposited is in a wallet, paid out or withdrawn, or in the tenant's fee
    balance; the fee
    balance is the fees of the completed transfers. Returns the fee balance."""
    await ledger_invariants(kit.db, kit.tenant_id)
    row = await kit.db.fetchrow(  # one statement: one snapshot
        "SELECT (SELECT coalesce(sum(balance), 0) FROM ledger.accounts WHERE tenant_id = $1"
        "        AND wallet_id IS NOT NULL) AS wallets,"
        " (SELECT coalesce(sum(amount), 0) FROM ledger.deposits WHERE tenant_id = $1) AS deposits,"
        " (SELECT coalesce(sum(p.amount), 0) FROM ledger.postings p JOIN ledger.accounts a"
        "        ON a.id = p.account_id WHERE a.tenant_id = $1"
        "        AND a.kind IN ('payouts', 'settlement')) AS paid_out,"
        " (SELECT coalesce(sum(p.amount), 0) FROM ledger.postings p JOIN ledger.accounts a"
        "        ON a.id = p.account_id WHERE a.tenant_id = $1 AND a.kind = 'fees') AS fees,"
        " (SELECT coalesce(sum(fee_amount), 0) FROM ledger.transfers WHERE tenant_id = $1"
        "        AND state = 'completed') AS fees_charged",
        kit.tenant_id,
    )
    assert row["wallets"] + row["paid_out"] + row["fees"] == row["deposits"], dict(row)
    assert row["fees"] == row["fees_charged"] >= 0, dict(row)
    return Decimal(row["fees"])


async def run_sequence(kit: LedgerKit, sequence: list[Op]) -> None:
    kit.tenant_id = str(uuid.uuid4())
    wallets = [await kit.funded_wallet("0") for _ in range(N_WALLETS)]
    ids = [w["wallet_id"] for w in wallets]
    # Lower bound: what is surely available now; eventual: what will be once all settles.
    lower = [Decimal(0)] * N_WALLETS
    eventual = [Decimal(0)] * N_WALLETS
    fees = Decimal(0)  # the developer fees the completed transfers will have charged
    for op in sequence:
        if op.kind == "deposit":
            r = await kit.send(kit.deposit_cmd(wallets[op.src]["virtual_account_id"], str(op.amount)))
            assert r.status == 201, r.error
            lower[op.src] += op.amount
            eventual[op.src] += op.amount
        else:
            dst = op.dst if op.dst != op.src else (op.src + 1) % N_WALLETS
            if op.kind == "book":
                cmd = kit.book_cmd(ids[op.src], ids[dst], str(op.amount))
            elif op.kind == "onchain":
                cmd = kit.onchain_cmd(wallets[op.src], wallets[dst]["deposit_address"], str(op.amount))
            elif op.kind == "withdraw":  # an address outside the suite
                cmd = kit.onchain_cmd(wallets[op.src], "0x" + secrets.token_hex(20), str(op.amount))
            else:
                cmd = kit.payout_cmd(ids[op.src], str(op.amount))
            if op.fee_pct:
                cmd = msgspec.structs.replace(cmd, developer_fee=DeveloperFee(percentage=str(op.fee_pct)))
            charged = developer_fee_amount(op.amount, op.fee_pct, None, 6)
            r = await kit.send(cmd)
            if r.ok:
                assert eventual[op.src] >= op.amount, (op, eventual)
                lower[op.src] -= op.amount
                eventual[op.src] -= op.amount
                if op.outcome in ("fail", "return"):
                    eventual[op.src] += op.amount  # released or credited back later (the fee too)
                else:
                    fees += charged
                    if op.kind in ("book", "onchain"):
                        eventual[dst] += op.amount - charged
                        if op.kind == "book":
                            lower[dst] += op.amount - charged
            else:
                assert r.error.details.get("reason") == "insufficient_funds", r.error
                assert lower[op.src] < op.amount, (op, lower)
        await books_balance(kit)
    # Let the simulator settle everything, then compare with the model.
    for _ in range(100):
        open_ = await kit.db.fetchval(
            "SELECT count(*) FROM ledger.transfers WHERE tenant_id = $1 AND (state <> ALL($2::text[])"
            " OR next_step_at IS NOT NULL)",
            kit.tenant_id,
            list(TERMINAL),
        )
        if not open_:
            break
        await asyncio.sleep(0.2)
    assert not open_
    assert await books_balance(kit) == fees
    for i, wid in enumerate(ids):
        assert await kit.balances(wid) == (eventual[i], Decimal(0)), (i, eventual)


@pytest.mark.integration
def test_random_money_sequences_keep_the_books(stack: Stack) -> None:
    loop = asyncio.new_event_loop()
    cm = open_kit(stack)
    kit = loop.run_until_complete(cm.__aenter__())
    try:

        @settings(
            max_examples=8,
            deadline=None,
            database=None,
            derandomize=False,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
        )
        @given(sequence=st.lists(ops, min_size=1, max_size=10))
        def check(sequence: list[Op]) -> None:
            loop.run_until_complete(run_sequence(kit, sequence))

        check()
    finally:
        loop.run_until_complete(cm.__aexit__(None, None, None))
        loop.close()

"""Batches of transfers applied the TigerBeetle way (journal.Journal.apply).

Unit: the core's in-memory check (``ledger.core.entries``) refuses exactly the movement that
would overdraw, alone.
Property (real PostgreSQL, real broker): random batches of book transfers (overdrafts, a hot
wallet, reused idempotency keys, redelivered commands) applied by TWO LedgerConsumer objects
at once, each with its own connection pool, never change the sum of all wallet accounts,
never overdraw one, keep every balance equal to its postings, and never deadlock: no batch
fails (``run_batch`` is called directly, so a deadlock would raise here) and the database's
``pg_stat_database.deadlocks`` does not move.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from decimal import Decimal

import asyncpg
import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import SecretStr

from common import failpoints
from common.broker import create_broker
from common.contracts import Ctx, Result, encode
from common.contracts.commands import CreateTransfer, Party
from common.db import create_engine, sessionmaker
from common.faults import LostRace, is_transient
from common.ids import new_id
from common.outbox import Outbox, OutMessage
from common.settings import Settings
from common.topics import Topics
from ledger.config import LedgerConfig
from ledger.core import accounts, entries
from ledger.handlers import LedgerConsumer
from tests.conftest import AUTHORITY, Stack
from tests.support.db import pg_kwargs
from tests.support.ledger import allow, deadlocks, ledger_invariants, open_kit

D = Decimal
N_WALLETS = 6
FUNDS = D("50.00")


# ---- unit: the in-memory check ----


def _move(src: str, dst: str, amount: str) -> entries.Movement:
    x = D(amount)
    e = entries.entry(
        tenant_id="t",
        mode="sandbox",
        kind="transfer_hold",
        postings=[(f"{src}.available", "USDC", -x), (f"{dst}.available", "USDC", x)],
    )
    return entries.Movement([e], refusable_for=src)


@pytest.mark.unit
def test_an_overdraft_refuses_only_its_own_movement() -> None:
    balances = {"a.available": D(10), "b.available": D(0)}
    deltas: dict[str, Decimal] = defaultdict(Decimal)
    moves = [_move("a", "b", "6"), _move("a", "b", "6"), _move("b", "a", "3"), _move("a", "b", "7")]
    ok = [entries.try_movement(m, balances, deltas) for m in moves]
    # 10 - 6 = 4; 6 more would overdraw; b pays 3 back: 7; 7 fits exactly.
    assert ok == [True, False, True, True]
    assert balances == {"a.available": D(0), "b.available": D(10)}
    assert deltas == {"a.available": D(-10), "b.available": D(10)}


# ---- property: two runtimes, random batches ----


@dataclass(frozen=True)
class Op:
    src: int
    dst: int
    cents: int
    reuse_key_of: int | None = None  # an earlier op's idempotency key
    same_body: bool = False  # with that key, the earlier op's transfer again (a caller's retry)
    redeliver: bool = False  # the same command twice (same command id)


ops = st.builds(
    Op,
    src=st.one_of(st.just(0), st.just(0), st.integers(0, N_WALLETS - 1)),  # wallet 0 is hot
    dst=st.integers(0, N_WALLETS - 1),
    cents=st.integers(1, 3000),  # up to 30.00 against 50.00 per wallet: overdrafts happen
    reuse_key_of=st.one_of(st.none(), st.none(), st.none(), st.integers(0, 40)),
    same_body=st.booleans(),
    redeliver=st.sampled_from([False, False, False, False, True]),
)
batches = st.lists(st.lists(ops, min_size=1, max_size=25), min_size=2, max_size=8)


@asynccontextmanager
async def two_runtimes(stack: Stack) -> AsyncIterator[list[LedgerConsumer]]:
    settings_ = Settings(
        kafka_bootstrap=stack.stores.kafka_bootstrap,
        database_url=stack.stores.database_url,
        instance_id=f"ledger-prop-{uuid.uuid4().hex[:8]}",
        ledger_signing_key=SecretStr(AUTHORITY["SLUICE_LEDGER_SIGNING_KEY"]),  # it signs what it publishes
    )
    broker = create_broker(settings_, "ledger-prop")
    await broker.start()
    engines = [create_engine(stack.stores.database_url, 4) for _ in range(2)]
    runtimes = [
        LedgerConsumer(
            settings_,
            broker,
            sessionmaker(e),
            Outbox("ledger", broker, lazy_delete=True, answers_from_inbox=True),
            Topics(settings_.topic_prefix),
            ledger_config=LedgerConfig(settle_s=3600),
        )
        for e in engines
    ]
    try:
        yield runtimes
    finally:
        for e in engines:
            await e.dispose()
        await broker.stop()


def book(tenant_id: str, src: str, dst: str, amount: Decimal, key: str) -> CreateTransfer:
    ctx = Ctx(request_id=new_id("req"), tenant_id=tenant_id, mode="sandbox", reply_to=None)
    return CreateTransfer(
        command_id=new_id("cmd"),
        ctx=ctx,
        decision=allow(),
        transfer_id=new_id("tr"),
        kind="transfer",
        source=Party(
            payment_rail="provider_wallet", currency="USDC", amount=str(amount), provider_wallet_id=src
        ),
        destination=Party(payment_rail="provider_wallet", currency="USDC", provider_wallet_id=dst),
        amount=str(amount),
        currency="USDC",
        idempotency_key=key,
    )


async def run_example(
    runtimes: list[LedgerConsumer],
    db: asyncpg.Connection,
    ids: list[str],
    tenant_id: str,
    plan: list[list[Op]],
) -> None:
    before = await db.fetch("SELECT id, balance FROM ledger.accounts WHERE wallet_id = ANY($1::text[])", ids)
    total_before = sum(r["balance"] for r in before)
    dl_before = await deadlocks(db)
    cmds: list[CreateTransfer] = []
    sent: list[list[CreateTransfer]] = []
    for batch in plan:
        out: list[CreateTransfer] = []
        for op in batch:
            dst = op.dst if op.dst != op.src else (op.src + 1) % N_WALLETS
            src, to, amount, key = ids[op.src], ids[dst], D(op.cents) / 100, uuid.uuid4().hex
            if op.reuse_key_of is not None and op.reuse_key_of < len(cmds):
                earlier = cmds[op.reuse_key_of]
                key = earlier.idempotency_key
                if op.same_body:  # a retry under a new command id: answered as the first
                    src, to, amount = (
                        earlier.source.provider_wallet_id or "",
                        earlier.destination.provider_wallet_id or "",
                        D(earlier.amount),
                    )
            cmd = book(tenant_id, src, to, amount, key)
            cmds.append(cmd)
            out.append(cmd)
            if op.redeliver:
                out.append(cmd)
        sent.append(out)

    async def drive(runtime: LedgerConsumer, mine: list[list[CreateTransfer]]) -> None:
        for b in mine:
            await runtime.run_batch(b)  # raises on any database error, a deadlock included

    # Batches alternate between the two runtimes, which run at the same time (a failure in
    # one cancels the other, so nothing of this example runs on into the next).
    async with asyncio.TaskGroup() as tg:
        tg.create_task(drive(runtimes[0], sent[0::2]))
        tg.create_task(drive(runtimes[1], sent[1::2]))
    rows = await db.fetch(
        "SELECT command_id, result FROM ledger.inbox WHERE command_id = ANY($1::text[])",
        [c.command_id for c in cmds],
    )
    results = {r["command_id"]: msgspec.json.decode(r["result"], type=Result) for r in rows}
    assert len(results) == len(cmds), "every command answered exactly once"
    moved: dict[str, Decimal] = {i: D(0) for i in ids}
    transfers = {
        r["id"]: r
        for r in await db.fetch(
            "SELECT id, source_wallet_id, destination_wallet_id, amount, state, idempotency_key"
            " FROM ledger.transfers WHERE tenant_id = $1 AND id = ANY($2::text[])",
            tenant_id,
            [c.transfer_id for c in cmds],
        )
    }
    for t in transfers.values():
        assert t["state"] == "completed"
        moved[t["source_wallet_id"]] -= t["amount"]
        moved[t["destination_wallet_id"]] += t["amount"]
    for c in cmds:
        r = results[c.command_id]
        if r.error is None:
            assert r.status == 201 and r.data["state"] == "completed"
            # The transfer answered exists, under this command's key: its own, or (a key used
            # again) the first transfer of that key, in which case this one made no row.
            answered = transfers.get(r.data["transfer_id"])
            assert answered is not None, f"a 201 for transfer {r.data['transfer_id']}, which has no row"
            assert answered["idempotency_key"] == c.idempotency_key, (dict(answered), c)
            assert answered["id"] == c.transfer_id or c.transfer_id not in transfers
        else:
            assert r.error.details.get("reason") == "insufficient_funds" or r.status == 409, r.error
            assert c.transfer_id not in transfers
    after = {
        r["id"]: r["balance"]
        for r in await db.fetch(
            "SELECT id, balance FROM ledger.accounts WHERE wallet_id = ANY($1::text[])", ids
        )
    }
    assert sum(after.values()) == total_before, "money was created or destroyed"
    assert all(b >= 0 for b in after.values()), after
    start = {r["id"]: r["balance"] for r in before}
    for w in ids:
        assert after[accounts.available(w)] == start[accounts.available(w)] + moved[w]
        assert after[accounts.held(w)] == 0
    keys = [t["idempotency_key"] for t in transfers.values()]
    assert len(keys) == len(set(keys)), "an idempotency key paid twice"
    await ledger_invariants(db, tenant_id)
    assert await deadlocks(db) == dl_before, "PostgreSQL detected a deadlock"


@pytest.mark.integration
@pytest.mark.long
@pytest.mark.timeout(900)
def test_two_runtimes_apply_random_batches_without_deadlock_or_lost_cents(stack: Stack) -> None:
    loop = asyncio.new_event_loop()

    async def setup() -> tuple[list[str], str]:
        async with open_kit(stack) as kit:
            ws = [await kit.funded_wallet(str(FUNDS)) for _ in range(N_WALLETS)]
            return [w["wallet_id"] for w in ws], kit.tenant_id

    ids, tenant_id = loop.run_until_complete(setup())
    cm = two_runtimes(stack)
    runtimes = loop.run_until_complete(cm.__aenter__())
    db = loop.run_until_complete(asyncpg.connect(**pg_kwargs(stack.stores.database_url)))
    try:

        @settings(
            max_examples=15,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
        )
        @given(plan=batches)
        def check(plan: list[list[Op]]) -> None:
            loop.run_until_complete(run_example(runtimes, db, ids, tenant_id, plan))

        check()
    finally:
        loop.run_until_complete(db.close())
        loop.run_until_complete(cm.__aexit__(None, None, None))
        loop.close()


@pytest.mark.integration
async def test_queued_customers_are_inserted_in_one_statement(stack: Stack) -> None:
    from common.contracts.commands import CreateCustomer

    tenant_id = str(uuid.uuid4())
    cmds = [
        CreateCustomer(
            command_id=new_id("cmd"),
            ctx=Ctx(request_id=new_id("req"), tenant_id=tenant_id, mode="sandbox", reply_to=None),
            decision=allow(),
            customer_id=new_id("cus"),
            account_type="business" if i % 2 else "individual",
            email=f"c{i}@example.com",
            country_code="DE",
            service_user_id=f"u-{i}",
            full_name=None if i % 2 else f"Person {i}",
            company_name=f"Company {i}" if i % 2 else None,
        )
        for i in range(5)
    ]
    async with two_runtimes(stack) as runtimes:
        await runtimes[0].run_batch(cmds)
    db = await asyncpg.connect(**pg_kwargs(stack.stores.database_url))
    try:
        rows = await db.fetch(
            "SELECT id, account_type, full_name, company_name, country_code FROM ledger.customers"
            " WHERE tenant_id = $1 ORDER BY email",
            tenant_id,
        )
        results = await db.fetch(
            "SELECT result FROM ledger.inbox WHERE command_id = ANY($1::text[])", [c.command_id for c in cmds]
        )
    finally:
        await db.close()
    assert [r["id"] for r in rows] == [c.customer_id for c in cmds]
    assert rows[1]["company_name"] == "Company 1" and rows[1]["full_name"] is None
    assert {r["country_code"] for r in rows} == {"DE"}
    assert sorted(msgspec.json.decode(r["result"])["status"] for r in results) == [201] * 5


# ---- the inbox: one row per command, written once ----


async def _inbox(db: asyncpg.Connection, cmds: list[CreateTransfer]) -> dict[str, Result]:
    rows = await db.fetch(
        "SELECT command_id, result FROM ledger.inbox WHERE command_id = ANY($1::text[])",
        [c.command_id for c in cmds],
    )
    return {r["command_id"]: msgspec.json.decode(r["result"], type=Result) for r in rows}


@pytest.mark.integration
async def test_a_batch_redelivered_to_two_instances_at_once_books_once(stack: Stack) -> None:
    """The same batch on two ledger instances, the first paused once its command ids are held
    and the inbox read (failpoint ``ledger.after_claim``): the second waits for the first to
    commit, then answers every command from the inbox; neither fails, each transfer is booked
    once. Without the hold both read an empty inbox: the second books again into the first's
    rows and its inbox write finds them recorded (LostRace)."""
    async with open_kit(stack) as kit:
        src, dst = await kit.funded_wallet("50.00"), await kit.funded_wallet("0")
        tenant_id = kit.tenant_id
    cmds = [
        book(tenant_id, src["wallet_id"], dst["wallet_id"], D("1.25"), uuid.uuid4().hex) for _ in range(8)
    ]
    db = await asyncpg.connect(**pg_kwargs(stack.stores.database_url))
    failpoints.configure("ledger.after_claim=1*sleep(1.0)")
    try:
        async with two_runtimes(stack) as (first, second):

            async def later() -> None:
                await asyncio.sleep(0.3)  # the first is asleep holding the ids
                await second.run_batch(cmds)

            async with asyncio.TaskGroup() as tg:  # either raising fails the test
                tg.create_task(first.run_batch(cmds))
                tg.create_task(later())
        results = await _inbox(db, cmds)
        assert sorted(r.status for r in results.values()) == [201] * 8
        booked = await db.fetchval(
            "SELECT count(*) FROM ledger.transfers WHERE id = ANY($1::text[])", [c.transfer_id for c in cmds]
        )
        moved = await db.fetchval(
            "SELECT balance FROM ledger.accounts WHERE id = $1", accounts.available(dst["wallet_id"])
        )
        assert (booked, moved) == (8, D("10.00"))
        await ledger_invariants(db, tenant_id)
    finally:
        failpoints.configure(None)
        await db.close()


@pytest.mark.integration
async def test_a_command_recorded_without_the_hold_rolls_the_batch_back_to_retry(stack: Stack) -> None:
    """An instance of an earlier release claims by inserting the inbox row first, without the
    hold: a batch of this release that read the inbox before it committed finds the row at
    its write, raises LostRace (transient: the consumer tries again) and rolls back whole;
    tried again it answers the stored result and books nothing more."""
    async with open_kit(stack) as kit:
        src, dst = await kit.funded_wallet("50.00"), await kit.funded_wallet("0")
        tenant_id = kit.tenant_id
    cmds = [
        book(tenant_id, src["wallet_id"], dst["wallet_id"], D("2.00"), uuid.uuid4().hex) for _ in range(3)
    ]
    raced = cmds[1]
    old = await asyncpg.connect(**pg_kwargs(stack.stores.database_url))
    db = await asyncpg.connect(**pg_kwargs(stack.stores.database_url))
    stored = Result(command_id=raced.command_id, request_id="req_old", status=409)
    try:
        async with two_runtimes(stack) as (runtime, _):
            tx = old.transaction()
            await tx.start()
            await old.execute("INSERT INTO ledger.inbox (command_id) VALUES ($1)", raced.command_id)

            async def commit_later() -> None:
                await asyncio.sleep(0.5)  # the batch waits on the row at its write
                await old.execute(
                    "UPDATE ledger.inbox SET result = $2 WHERE command_id = $1",
                    raced.command_id,
                    encode(stored),
                )
                await tx.commit()

            committing = asyncio.create_task(commit_later())
            with pytest.raises(LostRace) as lost:
                await runtime.run_batch(cmds)
            await committing
            assert is_transient(lost.value)
            assert await _inbox(db, cmds) == {raced.command_id: stored}  # the batch rolled back whole
            await runtime.run_batch(cmds)  # the consumer's retry
        results = await _inbox(db, cmds)
        assert results[raced.command_id] == stored
        assert [results[c.command_id].status for c in (cmds[0], cmds[2])] == [201, 201]
        booked = await db.fetch(
            "SELECT id FROM ledger.transfers WHERE id = ANY($1::text[])", [c.transfer_id for c in cmds]
        )
        assert {r["id"] for r in booked} == {cmds[0].transfer_id, cmds[2].transfer_id}
        await ledger_invariants(db, tenant_id)
    finally:
        await old.close()
        await db.close()


class _Recording(Outbox):
    """The ledger's outbox, publishing as it does and keeping what it published."""

    published: list[OutMessage]

    async def _publish(self, m: OutMessage) -> None:
        await super()._publish(m)
        self.published.append(m)


def _reply_probe(cmd: CreateTransfer) -> tuple[CreateTransfer, str]:
    to = Topics("sluice").replies(f"probe-{uuid.uuid4().hex[:8]}") + ".0"
    return msgspec.structs.replace(cmd, ctx=msgspec.structs.replace(cmd.ctx, reply_to=to)), to


@pytest.mark.integration
async def test_a_reply_has_no_outbox_row_and_a_redelivery_after_a_crash_answers_it(stack: Stack) -> None:
    """A reply is its command's result in the inbox: published after commit with no outbox
    row. A crash between commit and publish (failpoint ``ledger.after_commit``) leaves the
    command unacknowledged; read again, it is answered with the inbox's bytes and books
    nothing twice. Written as before (a row per reply) the first assertion fails."""
    async with open_kit(stack) as kit:
        src, dst = await kit.funded_wallet("20.00"), await kit.funded_wallet("0")
        tenant_id = kit.tenant_id
    cmd, to = _reply_probe(book(tenant_id, src["wallet_id"], dst["wallet_id"], D("3.00"), uuid.uuid4().hex))
    db = await asyncpg.connect(**pg_kwargs(stack.stores.database_url))
    failpoints.configure("ledger.after_commit=1*crash")
    try:
        async with two_runtimes(stack) as (runtime, other):
            with pytest.raises(failpoints.FailpointCrash):
                await runtime.run_batch([cmd])  # committed, never dispatched
            assert await db.fetchval("SELECT count(*) FROM ledger.outbox WHERE topic = $1", to) == 0
            other.outbox = recording = _Recording("ledger", other.broker, lazy_delete=True)
            recording.published = []
            await other.run_batch([cmd])  # the redelivery, on the other instance
        stored = await db.fetchval("SELECT result FROM ledger.inbox WHERE command_id = $1", cmd.command_id)
        [reply] = [m for m in recording.published if m.topic == to]
        assert reply.payload == stored and msgspec.json.decode(stored, type=Result).status == 201
        assert await db.fetchval("SELECT count(*) FROM ledger.transfers WHERE id = $1", cmd.transfer_id) == 1
    finally:
        failpoints.configure(None)
        await db.close()


@pytest.mark.integration
async def test_a_reply_whose_publish_fails_is_written_for_the_relay_with_its_bytes(stack: Stack) -> None:
    """When the broker refuses the publish after commit (failpoint ``outbox.ledger.publish``),
    the batch still returns (its partition is not held) and the reply is written as an outbox
    row carrying its bytes; the relay publishes it. Without that fallback no row exists and
    the reply is lost."""
    async with open_kit(stack) as kit:
        src, dst = await kit.funded_wallet("20.00"), await kit.funded_wallet("0")
        tenant_id = kit.tenant_id
    cmd, to = _reply_probe(book(tenant_id, src["wallet_id"], dst["wallet_id"], D("2.00"), uuid.uuid4().hex))
    db = await asyncpg.connect(**pg_kwargs(stack.stores.database_url))
    failpoints.configure("outbox.ledger.publish=2*error")  # the event's and the reply's publish
    try:
        async with two_runtimes(stack) as (runtime, _):
            runtime.outbox = refusing = _Recording("ledger", runtime.broker, grace_s=0, lazy_delete=True)
            refusing.published = []
            await runtime.run_batch([cmd])
            [row] = await db.fetch("SELECT payload, payload_of FROM ledger.outbox WHERE topic = $1", to)
            stored = await db.fetchval(
                "SELECT result FROM ledger.inbox WHERE command_id = $1", cmd.command_id
            )
            assert (row["payload"], row["payload_of"]) == (stored, None)
            while await refusing.relay_once(runtime.sessions):
                pass
        [reply] = [m for m in refusing.published if m.topic == to]
        assert reply.payload == stored and msgspec.json.decode(stored, type=Result).status == 201
        assert await db.fetchval("SELECT count(*) FROM ledger.outbox WHERE topic = $1", to) == 0
    finally:
        failpoints.configure(None)
        await db.close()

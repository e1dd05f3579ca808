"""Driving the ledger through the real broker: publish commands to ``ledger_commands`` with
an :class:`RpcClient`, await their Results, and look at the ledger schema with asyncpg.

Commands are built the way the gateway and compliance build them (a ``Ctx`` with a reply
address, a compliance ``decision`` stamp on money commands).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal, TypeVar

import asyncpg
import msgspec
from aiokafka import AIOKafkaConsumer, TopicPartition

from common.authority import SigningKey
from common.broker import create_broker
from common.contracts import Ctx, Decision, LedgerRead, Result
from common.contracts.base import Command
from common.contracts.commands import (
    CreateCustomer,
    CreateTransfer,
    CreateVirtualAccount,
    CreateWallet,
    GetResource,
    ListResources,
    Party,
    ReviewTransfer,
    SandboxDeposit,
    VADestination,
    partition_key,
)
from common.ids import new_id
from common.rpc import RpcClient
from common.settings import Settings
from common.topics import Topics
from ledger.authority import DECIDED_BY
from ledger.core import chain
from tests.conftest import AUTHORITY, Stack
from tests.support.db import pg_kwargs
from tests.support.kafka import partitions
from tools.stack.processes import free_port
from tools.stack.suite import Proc

C = TypeVar("C", bound=Command)


def ledger_key() -> SigningKey:
    """The test stack's ledger signing key: what the ledger itself would sign (a release, an
    event) for a test that must publish one as the ledger does."""
    return SigningKey.parse(AUTHORITY["SLUICE_LEDGER_SIGNING_KEY"], "ledger")


def allow(outcome: str = "allow") -> Decision:
    return Decision(decision_id=new_id("dec"), outcome=outcome, rule="test")  # type: ignore[arg-type]


@dataclass
class LedgerKit:
    stack: Stack
    rpc: RpcClient
    db: asyncpg.Connection
    topics: Topics
    tenant_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    mode: str = "sandbox"
    events: list[dict[str, Any]] = field(default_factory=list)
    _watch: tuple[AIOKafkaConsumer, asyncio.Task[None]] | None = None
    _unwatch: Callable[[], None] | None = None

    def ctx(self, **over: Any) -> Ctx:
        base = {
            "request_id": new_id("req"),
            "tenant_id": self.tenant_id,
            "mode": self.mode,
            "reply_to": self.rpc.reply_topic,
        }
        return Ctx(**{**base, **over})

    def signed(self, cmd: C) -> C:
        """``cmd`` signed as its decider signs it (compliance or admin: docs/security.md)."""
        return self.stack.settings().signing_key(DECIDED_BY[type(cmd)]).sign(cmd)

    async def send(self, cmd: Command, wait_s: float = 20, *, sign: bool = True) -> Result:
        """A read to ``ledger.reads``; anything else to ``ledger.commands``, signed unless
        ``sign`` is False (sent as it is: a forger's command)."""
        if isinstance(cmd, LedgerRead):
            topic = self.topics.ledger_reads
        else:
            topic, cmd = self.topics.ledger_commands, (self.signed(cmd) if sign else cmd)
        return await self.rpc.call(topic, cmd, key=partition_key(cmd), timeout=wait_s)

    async def ok(self, cmd: Command) -> Any:
        r = await self.send(cmd)
        assert r.error is None, (type(cmd).__name__, r.error)
        return r.data

    # ---- resources ----

    def customer_cmd(self, **over: Any) -> CreateCustomer:
        """An individual customer, allowed by compliance; ``over`` replaces any field."""
        fields = {
            "command_id": new_id("cmd"),
            "ctx": self.ctx(),
            "decision": allow(),
            "customer_id": new_id("cus"),
            "account_type": "individual",
            "email": "ada@example.com",
            "country_code": "US",
            "service_user_id": "u-1",
            "full_name": "Ada Lovelace",
            **over,
        }
        return CreateCustomer(**fields)

    async def customer(self, **over: Any) -> str:
        return (await self.ok(self.customer_cmd(**over)))["customer_id"]

    def allowed(self, cls: type[C], ctx: dict[str, Any] | None = None, **fields: Any) -> C:
        """A ``cls`` command with a fresh id, this kit's context (``ctx`` replacing any of
        it) and compliance's allow decision."""
        return cls(command_id=new_id("cmd"), ctx=self.ctx(**(ctx or {})), decision=allow(), **fields)

    def wallet_cmd(self, customer_id: str, symbol: str = "USDC", chain: str = "ETH") -> CreateWallet:
        return self.allowed(
            CreateWallet, wallet_id=new_id("wal"), customer_id=customer_id, symbol=symbol, chain=chain
        )

    async def wallet(self, customer_id: str, symbol: str = "USDC", chain: str = "ETH") -> dict[str, Any]:
        return await self.ok(self.wallet_cmd(customer_id, symbol, chain))

    def va_cmd(self, customer_id: str, va_currency: str, /, **dest: Any) -> CreateVirtualAccount:
        return self.allowed(
            CreateVirtualAccount,
            virtual_account_id=new_id("va"),
            customer_id=customer_id,
            currency=va_currency,
            destination=VADestination(**dest),
        )

    async def va(self, customer_id: str, wallet: dict[str, Any], currency: str = "USD") -> str:
        data = await self.ok(
            self.va_cmd(
                customer_id,
                currency,
                rail="provider_wallet",
                currency=wallet["symbol"],
                provider_wallet_id=wallet["wallet_id"],
            )
        )
        return data["virtual_account_id"]

    def deposit_cmd(self, va_id: str, amount: str, **ctx: Any) -> SandboxDeposit:
        return self.allowed(
            SandboxDeposit, ctx, deposit_id=new_id("dep"), virtual_account_id=va_id, amount=amount
        )

    async def funded_wallet(
        self, amount: str = "100.00", symbol: str = "USDC", chain: str = "ETH"
    ) -> dict[str, Any]:
        cus = await self.customer()
        w = await self.wallet(cus, symbol, chain)
        va = await self.va(cus, w, "EUR" if symbol == "EURC" else "USD")
        if Decimal(amount) > 0:
            await self.ok(self.deposit_cmd(va, amount))
        return {**w, "customer_id": cus, "virtual_account_id": va}

    # ---- money ----

    def _provider_wallet_cmd(
        self,
        kind: Literal["transfer", "payout"],
        src: str,
        amount: str,
        currency: str,
        destination: Party,
        decision: Decision | None,
        idem: str | None,
        ctx: dict[str, Any],
    ) -> CreateTransfer:
        """A transfer or payout of ``amount`` ``currency`` out of the provider wallet ``src``."""
        return CreateTransfer(
            command_id=new_id("cmd"),
            ctx=self.ctx(**ctx),
            decision=allow() if decision is None else decision,
            transfer_id=new_id("tr" if kind == "transfer" else "po"),
            kind=kind,
            source=Party(
                payment_rail="provider_wallet", currency=currency, amount=amount, provider_wallet_id=src
            ),
            destination=destination,
            amount=amount,
            currency=currency,
            idempotency_key=idem or uuid.uuid4().hex,
        )

    def book_cmd(
        self,
        src: str,
        dst: str,
        amount: str,
        currency: str = "USDC",
        *,
        decision: Decision | None = None,
        idem: str | None = None,
        **ctx: Any,
    ) -> CreateTransfer:
        to = Party(payment_rail="provider_wallet", currency=currency, provider_wallet_id=dst)
        return self._provider_wallet_cmd("transfer", src, amount, currency, to, decision, idem, ctx)

    def onchain_cmd(
        self,
        src_wallet: dict[str, Any],
        dst_address: str,
        amount: str,
        *,
        decision: Decision | None = None,
        **src_over: Any,
    ) -> CreateTransfer:
        source = {
            "payment_rail": "stablecoin",
            "currency": src_wallet["symbol"],
            "amount": amount,
            "chain": src_wallet["chain"],
            "customer_id": src_wallet["customer_id"],
            **src_over,
        }
        return CreateTransfer(
            command_id=new_id("cmd"),
            ctx=self.ctx(),
            decision=decision or allow(),
            transfer_id=new_id("tr"),
            kind="transfer",
            source=Party(**source),
            destination=Party(
                payment_rail="stablecoin",
                currency=src_wallet["symbol"],
                chain=src_wallet["chain"],
                address=dst_address,
            ),
            amount=amount,
            currency=src_wallet["symbol"],
            idempotency_key=uuid.uuid4().hex,
        )

    def payout_cmd(
        self,
        src: str,
        amount: str,
        currency: str = "USDC",
        *,
        rail: str = "ach",
        fiat: str = "USD",
        decision: Decision | None = None,
        idem: str | None = None,
        **ctx: Any,
    ) -> CreateTransfer:
        to = Party(payment_rail=rail, currency=fiat, external_account_id=new_id("ext"))
        return self._provider_wallet_cmd("payout", src, amount, currency, to, decision, idem, ctx)

    def review_cmd(self, transfer_id: str, decision: str, **ctx: Any) -> ReviewTransfer:
        return ReviewTransfer(
            command_id=new_id("cmd"), ctx=self.ctx(**ctx), transfer_id=transfer_id, decision=decision
        )  # type: ignore[arg-type]

    async def get(self, resource: str, resource_id: str, **ctx: Any) -> Result:
        return await self.send(
            GetResource(
                command_id=new_id("cmd"), ctx=self.ctx(**ctx), resource=resource, resource_id=resource_id
            )
        )

    async def list(self, resource: str, limit: int = 10, starting_after: str | None = None) -> Result:
        return await self.send(
            ListResources(
                command_id=new_id("cmd"),
                ctx=self.ctx(),
                resource=resource,
                limit=limit,
                starting_after=starting_after,
            )
        )

    async def balances(self, wallet_id: str) -> tuple[Decimal, Decimal]:
        rows = await self.db.fetch(
            "SELECT kind, balance FROM ledger.accounts WHERE wallet_id = $1", wallet_id
        )
        d = {r["kind"]: r["balance"] for r in rows}
        return d["available"], d["held"]

    async def state(self, transfer_id: str) -> str:
        return await self.db.fetchval("SELECT state FROM ledger.transfers WHERE id = $1", transfer_id)

    async def states(self, transfer_id: str) -> list[str]:
        rows = await self.db.fetch(
            "SELECT to_state FROM ledger.state_changes WHERE transfer_id = $1 ORDER BY id", transfer_id
        )
        return [r["to_state"] for r in rows]

    async def watch_events(self) -> None:
        """Start collecting this tenant's domain events from the events topic (from now on; on
        the in-process tier, from its in-memory bus)."""
        from tests.inprocess.bus import bus_at

        bus = bus_at(self.stack.stores.kafka_bootstrap)
        if bus is not None:
            sub = bus.subscribe(self.topics.events, "ledger-kit", self._collect)
            self._unwatch = lambda: bus.unsubscribe(sub)
            return
        consumer = AIOKafkaConsumer(
            bootstrap_servers=self.stack.stores.kafka_bootstrap,
            enable_auto_commit=False,
            group_id=None,
            fetch_max_wait_ms=20,
        )
        await consumer.start()
        found = await partitions(self.stack.stores.kafka_bootstrap, self.topics.events)
        parts = [TopicPartition(self.topics.events, p) for p in found]
        assert parts, "no events topic"
        consumer.assign(parts)
        await consumer.seek_to_end(*parts)
        for tp in parts:
            await consumer.position(tp)

        async def run() -> None:
            while True:
                batches = await consumer.getmany(timeout_ms=200)
                for records in batches.values():
                    await self._collect(records)

        self._watch = (consumer, asyncio.create_task(run()))

    async def _collect(self, records: Sequence[Any]) -> None:
        for rec in records:
            ev = msgspec.json.decode(rec.value or b"")
            if ev.get("tenant_id") == self.tenant_id:
                # One fact's events may share a record (EventBatch): each on its own.
                self.events.extend(ev.get("events") or [ev])

    async def events_for(self, resource_id: str, count: int, wait_s: float = 15) -> list[dict[str, Any]]:
        """The events whose data names ``resource_id``, once ``count`` of them arrived."""
        start = time.monotonic()
        while True:
            found = [
                e
                for e in self.events
                if resource_id
                in (
                    e["data"].get("transfer_id"),
                    e["data"].get("deposit_id"),
                    e["data"].get("wallet_id"),
                    e["data"].get("customer_id"),
                    e["data"].get("virtual_account_id"),
                )
            ]
            if len(found) >= count or time.monotonic() - start > wait_s:
                return found
            await asyncio.sleep(0.1)

    async def last_change(self, resource_id: str, count: int) -> tuple[str, str, str]:
        """(type, state, previous_state) of the last of ``count`` events naming ``resource_id``."""
        last = (await self.events_for(resource_id, count))[-1]
        return last["type"], last["data"]["state"], last["data"]["previous_state"]

    async def wait_state(self, transfer_id: str, state: str, wait_s: float = 15) -> float:
        start = time.monotonic()
        while time.monotonic() - start < wait_s:
            if await self.state(transfer_id) == state:
                return time.monotonic() - start
            await asyncio.sleep(0.1)
        raise AssertionError(f"{transfer_id} is {await self.state(transfer_id)}, not {state}")


async def seed_production_deposit(db: asyncpg.Connection, tenant_id: str, wallet_id: str, amount: str) -> str:
    """Fund a production wallet the way a bank deposit would (production takes no sandbox
    deposits): one balanced entry from the tenant's deposits account to the wallet, linked
    into the tenant's production hash chain like every entry (``ledger.core.chain``)."""
    ext = f"ext.{tenant_id}.production.USDC.deposits"
    entry = "je_test_" + uuid.uuid4().hex
    x = Decimal(amount)
    async with db.transaction():
        await db.execute(
            "INSERT INTO ledger.accounts (id, tenant_id, mode, currency, kind) VALUES ($1, $2, 'production',"
            " 'USDC', 'deposits') ON CONFLICT DO NOTHING",
            ext,
            tenant_id,
        )
        head = await db.fetchrow(
            "INSERT INTO ledger.journal_chains VALUES ($1, 'production', 0, $2) ON CONFLICT (tenant_id, mode)"
            " DO UPDATE SET seq = ledger.journal_chains.seq RETURNING seq, head_hash",
            tenant_id,
            chain.GENESIS,
        )
        created = await db.fetchval("SELECT now()")
        postings = [(ext, "USDC", -x), (f"{wallet_id}.available", "USDC", x)]
        text = chain.canonical_v2(
            entry, tenant_id, "production", "deposit", None, None, created, postings, None
        )
        link = chain.link(head["head_hash"], text)
        await db.execute(
            "INSERT INTO ledger.journal_entries (id, tenant_id, mode, kind, created_at, seq, hash)"
            " VALUES ($1, $2, 'production', 'deposit', $3, $4, $5)",
            entry,
            tenant_id,
            created,
            head["seq"] + 1,
            link,
        )
        await db.execute(
            "UPDATE ledger.journal_chains SET seq = $3, head_hash = $4 WHERE tenant_id = $1 AND mode = $2",
            tenant_id,
            "production",
            head["seq"] + 1,
            link,
        )
        await db.execute(
            "INSERT INTO ledger.postings (entry_id, account_id, currency, amount) VALUES"
            " ($1, $2, 'USDC', $4), ($1, $3, 'USDC', $5)",
            entry,
            ext,
            f"{wallet_id}.available",
            -x,
            x,
        )
        await db.execute(
            "UPDATE ledger.accounts SET balance = balance + $2 WHERE id = $1", f"{wallet_id}.available", x
        )
    return entry


async def ledger_invariants(db: asyncpg.Connection, tenant_id: str | None = None) -> None:
    """Every entry balances per currency; wallet balances equal their postings and are >= 0."""
    scope = "" if tenant_id is None else " WHERE e.tenant_id = $1"
    args = [] if tenant_id is None else [tenant_id]
    unbalanced = await db.fetch(
        "SELECT p.entry_id, p.currency, sum(p.amount) FROM ledger.postings p JOIN"
        f" ledger.journal_entries e ON e.id = p.entry_id{scope} GROUP BY p.entry_id, p.currency"
        " HAVING sum(p.amount) <> 0",
        *args,
    )
    assert unbalanced == [], unbalanced
    ascope = "" if tenant_id is None else " AND a.tenant_id = $1"
    drift = await db.fetch(
        "SELECT a.id, a.balance, coalesce(sum(p.amount), 0) AS posted FROM ledger.accounts a"
        f" LEFT JOIN ledger.postings p ON p.account_id = a.id WHERE a.wallet_id IS NOT NULL{ascope}"
        " GROUP BY a.id, a.balance HAVING a.balance <> coalesce(sum(p.amount), 0) OR a.balance < 0",
        *args,
    )
    assert drift == [], drift


@asynccontextmanager
async def open_kit(stack: Stack, prefix: str = "sluice") -> AsyncIterator[LedgerKit]:
    settings = Settings(
        kafka_bootstrap=stack.stores.kafka_bootstrap,
        topic_prefix=prefix,
        instance_id=f"ledger-test-{uuid.uuid4().hex[:10]}",
    )
    broker = create_broker(settings, "ledger-test")
    await broker.start()
    rpc = RpcClient(broker, settings, "ledger-test")
    await rpc.start()
    db = await asyncpg.connect(**pg_kwargs(stack.stores.database_url))
    kit = LedgerKit(stack, rpc, db, Topics(prefix))
    try:
        yield kit
    finally:
        if kit._watch:
            kit._watch[1].cancel()
            await kit._watch[0].stop()
        if kit._unwatch is not None:
            kit._unwatch()
        await db.close()
        await rpc.stop()
        await broker.stop()


@asynccontextmanager
async def failing_ledger(stack: Stack, prefix: str, failpoints: str) -> AsyncIterator[tuple[Proc, LedgerKit]]:
    """A ledger of its own on topic prefix ``prefix`` with ``SLUICE_FAILPOINTS`` set, once it is
    ready, and a kit on that prefix; the process is stopped after."""
    extra = {"SLUICE_TOPIC_PREFIX": prefix, "SLUICE_FAILPOINTS": failpoints}
    proc = stack.suite.start("ledger", free_port(), extra, instance=f"ledger-{prefix}")
    try:
        await asyncio.to_thread(stack.suite.wait_ready, [proc], 120)
        async with open_kit(stack, prefix) as kit:
            yield proc, kit
    finally:
        stack.suite.stop_proc(proc)


async def deadlocks(db: asyncpg.Connection) -> int:
    """PostgreSQL's count of deadlocks detected in this database so far."""
    await asyncio.sleep(1.1)  # statistics reach shared memory within a second
    await db.execute("SELECT pg_stat_clear_snapshot()")
    count: int = await db.fetchval(
        "SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()"
    )
    return count

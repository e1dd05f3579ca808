"""Helpers for the compliance tests: a private compliance process on its own topic prefix,
a probe that publishes commands and sees what compliance answered or forwarded, command
builders and direct SQL. No tests here.

A private prefix keeps the real ledgers out of the way: whatever compliance forwards stays
on ``<prefix>.ledger.commands``, where the probe reads it.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal

import msgspec
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from sqlalchemy.ext.asyncio import AsyncSession

from common.authority import SigningKey
from common.broker import ensure_topics, service_topics
from common.contracts import Command, ComplianceCommand, Ctx, Result, decode, encode
from common.contracts.commands import (
    ApproveRoute,
    CreateCustomer,
    CreateTransfer,
    CreateWallet,
    Party,
    RevokeRoute,
    SetTransferCap,
    UpsertExternalAccount,
    partition_key,
)
from common.settings import Settings
from common.topics import Topics
from compliance import allowance
from compliance import repository as repo
from compliance.allowance import Claim
from tests.conftest import AUTHORITY, Stack
from tests.support.db import pg_connect
from tools.stack.processes import free_port
from tools.stack.suite import Proc


def uid(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:16]}"


async def settle_claims(session: AsyncSession, claims: Sequence[Claim]) -> dict[str, Decimal]:
    """A batch's claims taken from their days as compliance's batch takes them: the usage rows
    locked, :func:`compliance.allowance.allot_batch`, then the batch's write statement with a
    decision per claim, a granted one carrying its hold. Returns the refused claims."""
    if not claims:
        return {}
    locked = await repo.lock_usage(session, sorted({c.key for c in claims}))
    refused, totals, holds = await allowance.allot_batch(session, claims, locked)
    rows = [
        {
            "id": uid("dec"),
            "command_id": c.command_id,
            "request_id": uid("req"),
            "tenant_id": c.tenant_id,
            "mode": c.mode,
            "command_type": "CreateTransfer",
            "outcome": "deny" if c.command_id in refused else "allow",
            "rule": "daily_cap" if c.command_id in refused else "allow",
            "inputs": "{}",
            "out_topic": "test",
            "transfer_id": c.transfer_id,
            **holds.get(c.command_id, {}),
        }
        for c in claims
    ]
    await repo.write_batch(session, repo.BatchWrite(usage=totals, decisions=rows))
    return refused


def start_private_compliance(
    stack: Stack, prefix: str, instances: int = 1, extra: dict[str, str] | None = None
) -> list[Proc]:
    procs = [
        stack.suite.start(
            "compliance",
            free_port(),
            {"SLUICE_TOPIC_PREFIX": prefix, **(extra or {})},
            instance=f"compliance-{prefix}-{i}",
        )
        for i in range(instances)
    ]
    stack.suite.wait_ready(procs, timeout=240)
    return procs


@contextmanager
def private_compliance(
    stack: Stack, prefix: str, instances: int = 1, extra: dict[str, str] | None = None
) -> Iterator[list[Proc]]:
    """:func:`start_private_compliance` for the length of a ``with`` block."""
    procs = start_private_compliance(stack, prefix, instances, extra)
    try:
        yield procs
    finally:
        for p in procs:
            stack.suite.stop_proc(p)


@dataclass
class Seen:
    kind: str  # reply | forward
    result: Result | None = None
    command: Any = None

    @property
    def forwarded(self) -> Any:
        assert self.kind == "forward", f"expected a forward, got {self.result}"
        return self.command

    @property
    def reply(self) -> Result:
        assert self.kind == "reply" and self.result is not None, f"expected a reply, got {self.command}"
        return self.result

    @property
    def reason(self) -> str | None:
        r = self.reply
        return r.error.details.get("reason") if r.error else None


def operator_signed(cmd: Command) -> bool:
    from compliance.handlers import operator_signed as needs

    return bool(needs(cmd))


class Probe:
    """Publishes commands to ``<prefix>.compliance.commands`` and waits for what comes out."""

    def __init__(self, bootstrap: str, prefix: str, database_url: str | None = None) -> None:
        self.bootstrap = bootstrap
        self.database_url = database_url
        self.topics = Topics(prefix)
        self.settings = Settings(kafka_bootstrap=bootstrap, topic_prefix=prefix)
        self.reply_topic = self.topics.replies("probe-" + uuid.uuid4().hex[:10])
        self.waiters: dict[str, asyncio.Future[Seen]] = {}
        self.forwards: list[Any] = []
        self.replies: list[Result] = []

    async def __aenter__(self) -> Probe:
        from tests.inprocess.bus import bus_at

        self.bus = bus_at(self.bootstrap)
        if self.bus is not None:  # the in-process tier: its bus, from now on
            self.producer = self.bus.producer()
            topics = (self.reply_topic, self.topics.ledger_commands)
            self.subs = [self.bus.subscribe(t, "probe", self._seen) for t in topics]
            return self
        await ensure_topics(self.settings, service_topics(self.settings))
        await ensure_topics(self.settings, [self.reply_topic], partitions=1)
        self.producer = AIOKafkaProducer(
            bootstrap_servers=self.bootstrap, acks=1, linger_ms=0, enable_idempotence=False
        )
        await self.producer.start()
        self.consumer = AIOKafkaConsumer(
            bootstrap_servers=self.bootstrap,
            group_id=None,
            enable_auto_commit=False,
            fetch_max_wait_ms=5,
            auto_offset_reset="latest",
        )
        await self.consumer.start()
        tps = [TopicPartition(self.reply_topic, 0)] + [
            TopicPartition(self.topics.ledger_commands, p)
            for p in range(self.settings.kafka_topic_partitions)
        ]
        self.consumer.assign(tps)
        await self.consumer.seek_to_end(*tps)
        for tp in tps:
            await self.consumer.position(tp)
        self.task = asyncio.create_task(self._run())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.bus is not None:
            for sub in self.subs:
                self.bus.unsubscribe(sub)
            return
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)
        await self.consumer.stop()
        await self.producer.stop()

    async def _run(self) -> None:
        while True:
            batches = await self.consumer.getmany(timeout_ms=200, max_records=500)
            for records in batches.values():
                await self._seen(records)

    async def _seen(self, records: Sequence[Any]) -> None:
        for rec in records:
            if rec.topic == self.reply_topic:
                result = decode(rec.value, Result)
                self.replies.append(result)
                self._resolve(result.command_id, Seen("reply", result=result))
            else:
                cmd = decode(rec.value, ComplianceCommand)  # type: ignore[arg-type]
                self.forwards.append(cmd)
                self._resolve(cmd.command_id, Seen("forward", command=cmd))

    def _resolve(self, command_id: str, seen: Seen) -> None:
        fut = self.waiters.get(command_id)
        if fut is not None and not fut.done():
            fut.set_result(seen)

    async def tenant(self, live: bool = True) -> str:
        """A tenant in admin's record (``identity.tenants``), enabled for production when
        ``live``: compliance reads whether a tenant is live there, never from the command
        (``ctx.live_enabled`` is the gateway's word)."""
        assert self.database_url, "Probe(..., database_url) to make tenants"
        tenant_id = uuid.uuid4()
        conn = await pg_connect(self.database_url)
        try:
            await conn.execute(
                "INSERT INTO identity.tenants (id, name, default_mode, rate_limit_per_minute, live_enabled)"
                " VALUES ($1, $2, 'sandbox', 600, $3)",
                tenant_id,
                f"compliance-probe-{tenant_id.hex[:16]}",
                live,
            )
        finally:
            await conn.close()
        return str(tenant_id)

    async def set_live(self, tenant_id: str, live: bool) -> None:
        """What admin's enable_live (four eyes) writes, written here directly."""
        assert self.database_url
        conn = await pg_connect(self.database_url)
        try:
            await conn.execute(
                "UPDATE identity.tenants SET live_enabled = $2 WHERE id = $1", uuid.UUID(tenant_id), live
            )
        finally:
            await conn.close()

    def ctx(self, tenant_id: str, mode: str = "sandbox", live: bool = False, **kw: Any) -> Ctx:
        return Ctx(
            request_id=uid("req"),
            tenant_id=tenant_id,
            mode=mode,  # type: ignore[arg-type]
            live_enabled=live,
            reply_to=self.reply_topic,
            **kw,
        )

    async def publish(self, cmd: Command, key: str | None = None) -> asyncio.Future[Seen]:
        if operator_signed(cmd):  # a policy command: admin's to give, signed as admin signs it
            cmd = SigningKey.parse(AUTHORITY["SLUICE_ADMIN_SIGNING_KEY"], "admin").sign(cmd)
        fut: asyncio.Future[Seen] = asyncio.get_running_loop().create_future()
        self.waiters[cmd.command_id] = fut
        await self.producer.send_and_wait(
            self.topics.compliance_commands, encode(cmd), key=(key or partition_key(cmd)).encode()
        )
        return fut

    async def submit(self, cmd: Command) -> Seen:
        return await asyncio.wait_for(await self.publish(cmd), 20.0)

    async def ok(self, cmd: Command) -> Any:
        """A policy command that must succeed: its data."""
        r = (await self.submit(cmd)).reply
        assert r.status == 200, r
        return r.data

    # ---- command builders ----
    def customer_cmd(
        self, tenant: str, mode: str = "sandbox", country: str = "US", live: bool = False
    ) -> CreateCustomer:
        """An individual customer of ``tenant`` in ``country``."""
        return CreateCustomer(
            command_id=uid("cmd"),
            ctx=self.ctx(tenant, mode, live),
            customer_id=uid("cus"),
            account_type="individual",
            email="a@example.com",
            country_code=country,
            service_user_id=uid("u"),
            full_name="A B",
        )

    async def customer(self, tenant: str, mode: str = "sandbox", country: str = "US") -> str:
        cmd = self.customer_cmd(tenant, mode, country)
        seen = await self.submit(cmd)
        assert seen.kind == "forward", seen
        return cmd.customer_id

    async def wallet(self, tenant: str, customer_id: str, mode: str = "sandbox") -> str:
        wid = uid("wal")
        seen = await self.submit(
            CreateWallet(
                command_id=uid("cmd"),
                ctx=self.ctx(tenant, mode),
                wallet_id=wid,
                customer_id=customer_id,
                symbol="USDC",
                chain="ETH",
            )
        )
        assert seen.kind == "forward", seen
        return wid

    def _money(
        self,
        tenant: str,
        kind: Literal["transfer", "payout"],
        src: str,
        amount: str,
        dest: Party,
        mode: str,
        live: bool,
        currency: str,
    ) -> CreateTransfer:
        """A transfer or payout of ``amount`` ``currency`` from the provider wallet ``src``."""
        return CreateTransfer(
            command_id=uid("cmd"),
            ctx=self.ctx(tenant, mode, live),
            transfer_id=uid("tr" if kind == "transfer" else "po"),
            kind=kind,
            idempotency_key=uid("idem"),
            amount=amount,
            currency=currency,
            source=Party(
                payment_rail="provider_wallet", currency=currency, amount=amount, provider_wallet_id=src
            ),
            destination=dest,
        )

    def transfer(
        self,
        tenant: str,
        src: str,
        dst: str,
        amount: str,
        mode: str = "sandbox",
        live: bool = False,
        currency: str = "USDC",
    ) -> CreateTransfer:
        dest = Party(payment_rail="provider_wallet", currency=currency, provider_wallet_id=dst)
        return self._money(tenant, "transfer", src, amount, dest, mode, live, currency)

    def payout(
        self,
        tenant: str,
        src: str,
        ea_id: str | None,
        amount: str,
        mode: str = "sandbox",
        live: bool = False,
        rail: str = "ach",
        currency: str = "USD",
    ) -> CreateTransfer:
        """USDC out to the external account ``ea_id`` in ``currency`` over ``rail``."""
        dest = Party(payment_rail=rail, currency=currency, external_account_id=ea_id)
        return self._money(tenant, "payout", src, amount, dest, mode, live, "USDC")

    async def approve_route(self, tenant: str, rail: str, currency: str, mode: str = "production") -> Any:
        return await self.ok(
            ApproveRoute(
                command_id=uid("cmd"), ctx=self.ctx(tenant, mode, actor="ops"), rail=rail, currency=currency
            )
        )

    async def revoke_route(self, tenant: str, rail: str, currency: str, mode: str = "production") -> Any:
        return await self.ok(
            RevokeRoute(
                command_id=uid("cmd"), ctx=self.ctx(tenant, mode, actor="ops"), rail=rail, currency=currency
            )
        )

    async def set_cap(
        self, tenant: str, per_transfer: str, daily: str, review: str | None = None, mode: str = "production"
    ) -> Any:
        return await self.ok(
            SetTransferCap(
                command_id=uid("cmd"),
                ctx=self.ctx(tenant, mode, actor="ops"),
                per_transfer=per_transfer,
                daily=daily,
                review_threshold=review,
            )
        )

    async def external_account(
        self,
        tenant: str,
        customer_id: str,
        approved: bool = True,
        mode: str = "sandbox",
        rail: str = "ach",
        currency: str = "USD",
        ea_id: str | None = None,
    ) -> Any:
        return await self.ok(
            UpsertExternalAccount(
                command_id=uid("cmd"),
                ctx=self.ctx(tenant, mode, actor="ops"),
                external_account_id=ea_id or uid("ea"),
                customer_id=customer_id,
                rail=rail,
                currency=currency,
                approved=approved,
                account_number="000123456789",
                routing_number="021000021",
            )
        )


def production_ready(probe: Probe, tenant: str) -> Any:
    """Approve the USDC book-transfer route and set a production cap."""

    async def go() -> None:
        await probe.approve_route(tenant, "provider_wallet", "USDC")
        await probe.set_cap(tenant, "1000", "5000")

    return go()


async def decisions_of(database_url: str, command_id: str) -> list[dict[str, Any]]:
    conn = await pg_connect(database_url)
    try:
        rows = await conn.fetch("SELECT * FROM compliance.decisions WHERE command_id = $1", command_id)
        return [dict(r) for r in rows]
    finally:
        await conn.close()


def stamp(cmd: Any) -> tuple[str, str]:
    assert cmd.decision is not None
    return cmd.decision.outcome, cmd.decision.rule


def to_builtins(x: Any) -> Any:
    return msgspec.to_builtins(x)

"""Daily caps decided by two compliance processes in one consumer group (partitions split
between them), and a cap given back when the ledger reports a transfer failed. The cap
accounting itself under concurrency, on PostgreSQL: tests/inprocess/test_compliance_caps.py."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from aiokafka import AIOKafkaProducer

from common.contracts import encode
from common.contracts.events import TransferUpdated
from tests.conftest import Stack
from tests.support.compliance import Probe, private_compliance, uid
from tests.support.db import pg_connect
from tests.support.ledger import ledger_key

pytestmark = pytest.mark.integration

PREFIX = "ccap" + uuid.uuid4().hex[:6]


@pytest.fixture(scope="module")
def two_instances(stack: Stack) -> Iterator[None]:
    """Two compliance processes in one consumer group: partitions split between them."""
    with private_compliance(stack, PREFIX, instances=2):
        yield


@pytest.fixture
async def probe(stack: Stack, two_instances: None) -> AsyncIterator[Probe]:
    async with Probe(stack.stores.kafka_bootstrap, PREFIX, stack.stores.database_url) as p:
        yield p


async def test_parallel_transfers_against_a_cap_exactly_k_pass(stack: Stack, probe: Probe) -> None:
    n, k = 24, 7
    t = await probe.tenant()
    await probe.approve_route(t, "provider_wallet", "USDC")
    await probe.set_cap(t, "10", str(10 * k))
    # Distinct source wallets spread the commands over partitions, so both instances decide.
    cmds = [probe.transfer(t, uid("wal"), uid("wal"), "10", "production", live=True) for _ in range(n)]
    started = time.monotonic()
    futs = await asyncio.gather(*(probe.publish(c) for c in cmds))
    seen = await asyncio.wait_for(asyncio.gather(*futs), 30)
    elapsed = time.monotonic() - started
    passed = [s for s in seen if s.kind == "forward"]
    refused = [s for s in seen if s.kind == "reply"]
    assert len(passed) == k, (len(passed), elapsed)
    assert {s.reason for s in refused} == {"transfer_cap_exceeded"}
    assert {s.reply.error.details["limit"] for s in refused if s.reply.error} == {"daily"}
    conn = await pg_connect(stack.stores.database_url)
    try:
        used = await conn.fetchval("SELECT used FROM compliance.cap_usage WHERE tenant_id = $1", t)
        deciders = await conn.fetchval(
            "SELECT count(*) FROM compliance.decisions WHERE tenant_id = $1 AND command_type ="
            " 'CreateTransfer'",
            t,
        )
    finally:
        await conn.close()
    assert used == Decimal(10 * k)
    assert deciders == n
    print(f"\n{n} racing transfers decided in {elapsed:.2f}s by two instances; {k} passed")


async def test_failed_transfer_gives_its_cap_back(stack: Stack, probe: Probe) -> None:
    t = await probe.tenant()
    await probe.approve_route(t, "provider_wallet", "USDC")
    await probe.set_cap(t, "10", "20")
    first = probe.transfer(t, uid("wal"), uid("wal"), "10", "production", live=True)
    assert (await probe.submit(first)).kind == "forward"
    assert (
        await probe.submit(probe.transfer(t, uid("wal"), uid("wal"), "10", "production", True))
    ).kind == "forward"
    refused = await probe.submit(probe.transfer(t, uid("wal"), uid("wal"), "10", "production", True))
    assert refused.reason == "transfer_cap_exceeded"
    # The ledger reports the first transfer failed (signed, as the ledger signs its events): its
    # 10 return to today's allowance, once.
    event = TransferUpdated(
        event_id=uid("evt"),
        tenant_id=t,
        mode="production",
        created_at=datetime.now(UTC).isoformat(),
        data={"transfer_id": first.transfer_id, "state": "failed", "previous_state": "processing"},
    )
    event = ledger_key().sign(event)
    producer = AIOKafkaProducer(bootstrap_servers=stack.stores.kafka_bootstrap, acks=1)
    await producer.start()
    try:
        for _ in range(2):  # delivered twice: released once
            await producer.send_and_wait(probe.topics.events, encode(event), key=t.encode())
    finally:
        await producer.stop()
    conn = await pg_connect(stack.stores.database_url)
    try:
        deadline = time.monotonic() + 20
        while await conn.fetchval("SELECT used FROM compliance.cap_usage WHERE tenant_id = $1", t) != 10:
            assert time.monotonic() < deadline, "cap usage was not released"
            await asyncio.sleep(0.2)
        await asyncio.sleep(0.5)
        assert await conn.fetchval("SELECT used FROM compliance.cap_usage WHERE tenant_id = $1", t) == 10
    finally:
        await conn.close()
    assert (
        await probe.submit(probe.transfer(t, uid("wal"), uid("wal"), "10", "production", True))
    ).kind == "forward"

"""The fault model (docs/failure-model.md) on real processes.

- a transient fault (store unreachable) in a consumer is waited out: the command succeeds
  once, nothing is dead-lettered, and ``/readyz`` says not ready meanwhile;
- a deterministic failure is dead-lettered after bounded tries, with its origin, and the
  caller is answered;
- dead letters are listed by operators and redriven once (a second redrive does nothing);
- a gateway SIGKILLed with a request in flight: a retry with the same key on the other
  gateway is decided within seconds of the lease expiring, with one effect.
"""

from __future__ import annotations

import asyncio
import signal
import time
import uuid

import asyncpg
import httpx
import pytest
from aiokafka import AIOKafkaProducer

from common.topics import Topics
from tests.conftest import Stack, Tenant, customer_body
from tests.support.db import pg_kwargs
from tests.support.kafka import dead_letters
from tests.support.ledger import failing_ledger
from tests.support.wait import eventually_async
from tools.stack.processes import free_port

pytestmark = [pytest.mark.integration, pytest.mark.long, pytest.mark.timeout(600)]


async def test_transient_fault_is_waited_out_never_dead_lettered(stack: Stack) -> None:
    """The ledger's store is 'unreachable' for its first 12 tries: the command still succeeds,
    exactly once; readiness said not ready while it waited; the DLQ stays empty."""
    prefix = f"tr{uuid.uuid4().hex[:8]}"
    async with failing_ledger(stack, prefix, "consume.ledger-commands=12*unavailable") as (proc, kit):
        cmd = kit.customer_cmd(
            email="f@example.com", service_user_id="u-" + uuid.uuid4().hex[:8], full_name="Fault Test"
        )
        sent = asyncio.create_task(kit.send(cmd, wait_s=60))
        degraded = False
        async with httpx.AsyncClient() as client:
            while not sent.done():
                r = await client.get(proc.url + "/readyz", timeout=5)
                degraded |= r.status_code == 503 and any(
                    "transient" in v for v in r.json()["checks"].values()
                )
                await asyncio.sleep(0.1)
            result = await sent
            assert result.status == 201, result
            assert degraded, "readiness never reported the consumer waiting"
            assert (await client.get(proc.url + "/readyz", timeout=5)).status_code == 200
        n = await kit.db.fetchval("SELECT count(*) FROM ledger.customers WHERE id = $1", cmd.customer_id)
        assert n == 1
        assert await dead_letters(stack.stores.kafka_bootstrap, prefix) == []


async def test_deterministic_failure_dead_lettered_with_origin_and_answered(stack: Stack) -> None:
    prefix = f"dl{uuid.uuid4().hex[:8]}"
    async with failing_ledger(stack, prefix, "consume.ledger-commands=error") as (_, kit):
        cmd = kit.customer_cmd(
            email="f@example.com", service_user_id="u-" + uuid.uuid4().hex[:8], full_name="Fault Test"
        )
        result = await kit.send(cmd, wait_s=30)
        assert result.status == 502 and result.error is not None
        assert result.error.details["reason"] == "ledger_failure"
        n = await kit.db.fetchval("SELECT count(*) FROM ledger.customers WHERE id = $1", cmd.customer_id)
        assert n == 0
        letters = await dead_letters(stack.stores.kafka_bootstrap, prefix, wait_s=5)
        mine = [d for d in letters if cmd.command_id.encode() in d.payload]
        assert len(mine) == 1, letters
        d = mine[0]
        assert d.service == "ledger" and d.topic == Topics(prefix).ledger_commands
        assert d.attempts == 3 and "FailpointError" in d.error
        assert d.partition >= 0 and d.offset >= 0 and d.request_id == cmd.ctx.request_id


async def test_dead_letters_listed_and_redriven_once(stack: Stack) -> None:
    """Garbage on the ledger's topic is dead-lettered by the main ledgers, kept by admin,
    listed with its origin; redriving it twice publishes it once."""
    topics = Topics("sluice")
    marker = uuid.uuid4().hex
    producer = AIOKafkaProducer(bootstrap_servers=stack.stores.kafka_bootstrap, enable_idempotence=False)
    await producer.start()
    try:
        meta = await producer.send_and_wait(topics.ledger_commands, f'{{"garbage":"{marker}"}}'.encode())
    finally:
        await producer.stop()

    def find() -> dict[str, object] | None:
        r = stack.admin_call("list_dead_letters", service="ledger", limit=100)
        assert r.status_code == 200, r.text
        for item in r.json()["data"]["items"]:
            if (item["topic"], item["partition"], item["offset"]) == (
                topics.ledger_commands,
                meta.partition,
                meta.offset,
            ):
                return item
        return None

    item = await eventually_async(
        lambda: asyncio.to_thread(find), timeout=60, interval=0.5, what="the dead letter in admin"
    )
    err = str(item["error"])
    assert item["attempts"] == 1 and ("DecodeError" in err or "ValidationError" in err), item
    assert item["redriven_at"] is None
    first = stack.admin_call("redrive_dead_letters", dead_letter_ids=[item["dead_letter_id"]])
    assert first.status_code == 200, first.text
    assert first.json()["data"]["redriven"] == [item["dead_letter_id"]]
    second = stack.admin_call("redrive_dead_letters", dead_letter_ids=[item["dead_letter_id"]])
    assert second.json()["data"]["redriven"] == []
    # The redriven copy is back on the original topic (and, still garbage, dead-lettered anew).
    deadline = time.monotonic() + 60
    while True:
        r = stack.admin_call("list_dead_letters", service="ledger", limit=100)
        again = [
            i
            for i in r.json()["data"]["items"]
            if i["topic"] == topics.ledger_commands
            and i["dead_letter_id"] != item["dead_letter_id"]
            and (i["partition"], i["offset"]) != (meta.partition, meta.offset)
            and i["payload_bytes"] == item["payload_bytes"]
            and i["redriven_at"] is None
        ]
        if again:
            break
        assert time.monotonic() < deadline, "the redriven message never came back"
        await asyncio.sleep(0.5)
    bad = stack.admin_call("redrive_dead_letters", dead_letter_ids=["x"], all=True)
    assert bad.status_code == 400


def test_gateway_killed_in_flight_retry_elsewhere_decides_once(stack: Stack, tenant: Tenant) -> None:
    """A gateway dies right after publishing; the client's same-key retry on the other gateway
    is decided within seconds (the lease, not minutes), and there is one customer."""
    port = free_port()
    doomed = stack.suite.start(
        "gateway", port, {"SLUICE_FAILPOINTS": "rpc.after_send=kill"}, instance=f"gateway-doomed-{port}"
    )
    stack.suite.wait_ready([doomed], 120)
    body = customer_body()
    key = "killed-" + uuid.uuid4().hex
    with pytest.raises(httpx.TransportError):
        httpx.post(doomed.url + "/v1/customers", json=body, headers=tenant.headers(key), timeout=30)
    assert doomed.popen.wait(10) == -signal.SIGKILL
    stack.suite.stop_proc(doomed)  # gone from the suite's list: other tests check every process
    started = time.monotonic()
    while True:
        r = tenant.post("/v1/customers", body, idem=key, gateway=1)
        if r.status_code != 503:
            break
        # the first request's lease holds the key: the same key is being decided (docs/guides/errors.md)
        assert r.json()["error"]["details"]["reason"] == "in_flight", r.text
        assert time.monotonic() - started < 60, r.text
        time.sleep(float(r.headers.get("Retry-After", "1")))
    took = time.monotonic() - started
    assert r.status_code == 201, r.text
    assert took < 30, took  # the lease: gateway timeout + margin
    again = tenant.post("/v1/customers", body, idem=key, gateway=0)
    assert again.status_code == 201 and again.json() == r.json()

    async def created() -> list[asyncpg.Record]:
        db = await asyncpg.connect(**pg_kwargs(stack.stores.database_url))
        try:
            return await db.fetch(
                "SELECT id FROM ledger.customers WHERE tenant_id = $1 AND service_user_id = $2",
                tenant.tenant_id,
                body["service_user_id"],
            )
        finally:
            await db.close()

    ids = asyncio.run(created())
    assert [x["id"] for x in ids] == [r.json()["data"]["customer_id"]]

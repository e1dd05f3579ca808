"""Real deliveries to a local HTTP receiver: retries, dead letters and replay, rotation (both
signatures checked with the standardwebhooks package), and a slow endpoint beside a healthy
one. The first delivery's signature, its stored rows and a secret absent from the webhooks
service's log: tests/integration/test_webhooks_delivery.py."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import datetime

import pytest
from standardwebhooks import Webhook

from common.contracts.commands import ListDeliveries, ReplayDelivery
from tests.conftest import Stack, make_tenant
from tests.support.webhooks import (
    Received,
    Receiver,
    attempts_of,
    connect_db,
    create_customer,
    endpoint,
    standard_headers,
    wait_delivery,
    webhook_commands,
)

pytestmark = [pytest.mark.inprocess, pytest.mark.timeout(900)]


def for_customer(receiver: Receiver, customer_id: str) -> list[Received]:
    return [
        r for r in list(receiver.received) if json.loads(r.body)["data"].get("customer_id") == customer_id
    ]


async def test_receiver_failing_twice_then_succeeding_gets_three_attempts(stack: Stack) -> None:
    async with endpoint(stack, Receiver(plan=[500, 503])) as (tenant, receiver, _, created):
        customer_id = await create_customer(tenant)
        rows = await wait_delivery(stack, created.data["webhook_id"], "succeeded", timeout=30)
        assert [(d["status"], d["attempts"], d["last_status_code"]) for d in rows] == [("succeeded", 3, 200)]
        got = for_customer(receiver, customer_id)
        assert [g.answered for g in got] == [500, 503, 200]
        assert len({g.headers["x-service-webhook-id"] for g in got}) == 1  # receivers dedupe on it
        # The schedule (1 s between attempts in the test stack) was honoured.
        assert got[1].at - got[0].at >= 0.9 and got[2].at - got[1].at >= 0.9
        attempts = await attempts_of(stack, rows[0]["id"])
        assert [(a["attempt"], a["status_code"], a["error"]) for a in attempts] == [
            (1, 500, "http_500"),
            (2, 503, "http_503"),
            (3, 200, None),
        ]
        assert sum(1 for a in attempts if a["status_code"] == 200) == 1


async def test_receiver_down_for_the_whole_schedule_is_dead_lettered_then_replayed(stack: Stack) -> None:
    tenant = make_tenant(stack)
    receiver = Receiver()  # not started: connection refused for every attempt
    async with webhook_commands(stack) as wh:
        created = await wh.create(tenant.tenant_id, receiver.url)
        webhook_id = created.data["webhook_id"]
        await create_customer(tenant)
        rows = await wait_delivery(stack, webhook_id, "dead", timeout=40)
        assert [(d["status"], d["attempts"]) for d in rows] == [("dead", 4)]  # 1 + len("1,1,1")
        delivery_id = rows[0]["id"]
        attempts = await attempts_of(stack, delivery_id)
        assert len(attempts) == 4 and all(a["status_code"] is None and a["error"] for a in attempts)

        listed = await wh.call(ListDeliveries, "", target_tenant_id=tenant.tenant_id, status="dead")
        assert listed.status == 200, listed
        items = listed.data["items"]
        assert [i["delivery_id"] for i in items] == [delivery_id]
        assert items[0]["event_type"] == "customer.created" and items[0]["webhook_id"] == webhook_id
        assert items[0]["attempts"] == 4 and items[0]["last_status_code"] is None
        assert listed.data["next_cursor"] is None
        none = await wh.call(ListDeliveries, "", target_tenant_id=tenant.tenant_id, status="succeeded")
        assert none.data["items"] == []

        receiver.start()
        try:
            replay = await wh.call(ReplayDelivery, "", delivery_id=delivery_id)
            assert replay.status == 200, replay
            rows = await wait_delivery(stack, webhook_id, "succeeded", timeout=20)
            assert [(d["status"], d["attempts"], d["last_status_code"]) for d in rows] == [
                ("succeeded", 5, 200)
            ]
            assert len(receiver.received) == 1
            again = await wh.call(ReplayDelivery, "", delivery_id=delivery_id)
            assert again.status == 400 and again.error is not None
            assert again.error.code == "invalid_request"
            assert again.error.details["reason"] == "not_dead"
            missing = await wh.call(ReplayDelivery, "", delivery_id="dlv_missing")
            assert missing.status == 404
        finally:
            receiver.stop()


async def test_rotation_sends_both_signatures_and_answers_the_new_secret_once(stack: Stack) -> None:
    async with endpoint(stack) as (tenant, receiver, wh, created):
        old = created.data["signing_secret"]
        rotated = await wh.rotate(tenant.tenant_id, created.data["webhook_id"])
        assert rotated.status == 200, rotated
        new = rotated.data["signing_secret"]
        assert new != old and new.startswith("whsec_")
        assert rotated.data["previous_secret_expires_at"]
        await create_customer(tenant)
        got = await receiver.wait_for(1)
        assert len(got) == 1
        r = got[0]
        assert len(r.headers["x-service-signature"].split(" ")) == 2
        Webhook(new).verify(r.body, standard_headers(r))
        Webhook(old).verify(r.body, standard_headers(r))
        # The other tenant cannot rotate it.
        other = make_tenant(stack)
        refused = await wh.rotate(other.tenant_id, created.data["webhook_id"])
        assert refused.status == 404


SLOW_S = 12.0  # how long the slow endpoint holds each request


async def test_slow_endpoint_does_not_delay_a_healthy_one(stack: Stack) -> None:
    tenant = make_tenant(stack)
    slow = Receiver(delay_s=SLOW_S).start()
    healthy = Receiver().start()
    try:
        async with webhook_commands(stack) as wh:
            slow_id = (await wh.create(tenant.tenant_id, slow.url)).data["webhook_id"]
            healthy_id = (await wh.create(tenant.tenant_id, healthy.url)).data["webhook_id"]
            started = time.time()
            customers = await asyncio.gather(*(create_customer(tenant) for _ in range(8)))
            got = await healthy.wait_for(8, timeout=20)
            assert len(got) == 8
            await wait_delivery(stack, healthy_id, "succeeded", count=8, timeout=10)
            conn = await connect_db(stack)
            try:
                # A finished attempt is a row of attempts; one in progress is its delivery's
                # lease (the slow endpoint's 8 are all still in progress: 12 s each).
                rows = await conn.fetch(
                    "SELECT d.webhook_id, d.created_at, a.started_at, a.finished_at"
                    " FROM webhooks.deliveries d JOIN webhooks.attempts a ON a.delivery_id = d.id"
                    " WHERE d.tenant_id = $1"
                    " UNION ALL SELECT d.webhook_id, d.created_at, d.leased_at, NULL"
                    " FROM webhooks.deliveries d"
                    " WHERE d.tenant_id = $1 AND d.status = 'pending' AND d.lease_until > now()",
                    tenant.tenant_id,
                )
            finally:
                await conn.close()

            def waits(webhook_id: str) -> list[float]:
                return sorted(
                    (r["started_at"] - r["created_at"]).total_seconds()
                    for r in rows
                    if r["webhook_id"] == webhook_id
                )

            def slow_in_flight(at: datetime) -> int:
                return sum(
                    1
                    for r in rows
                    if r["webhook_id"] == slow_id
                    and r["started_at"] <= at
                    and (r["finished_at"] is None or r["finished_at"] > at)
                )

            fast = waits(healthy_id)
            busy = [slow_in_flight(r["started_at"]) for r in rows if r["webhook_id"] == healthy_id]
            print(
                f"8 customers in {time.time() - started:.2f}s; healthy claim waits {fast};"
                f" slow requests in flight meanwhile {busy}"
            )
            # Every healthy delivery started before any of the slow endpoint's requests could have
            # finished (SLOW_S each), while it held all 8 in flight (its limit is
            # SLUICE_WEBHOOKS_ENDPOINT_CONCURRENCY, 32 by default): none waited
            # behind them. A bound from the receiver's delay, not from this machine's speed.
            assert len(fast) == 8 and fast[-1] < SLOW_S, fast
            assert max(busy) == 8, busy
            assert {json.loads(g.body)["data"]["customer_id"] for g in got} == set(customers)
    finally:
        slow.stop()
        healthy.stop()

"""Durability and safety: a SIGKILLed service resumes its schedule, SSRF targets are refused
at registration (by a process configured like production) and again at delivery."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import signal
import uuid
from collections.abc import AsyncIterator

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from common.contracts.commands import CreateWebhook
from common.db import create_engine, migrate, sessionmaker, transaction
from common.ids import new_id
from common.keyring import KeyRing
from tests.conftest import Stack
from tests.support.dns import DnsResolver, DnsServer
from tests.support.webhooks import (
    Receiver,
    _rows,
    attempts_of,
    create_customer,
    customer_created,
    deliveries_of,
    endpoint,
    wait_delivery,
    webhook_commands,
)
from tools.stack.processes import free_port
from tools.stack.stores import create_database, drop_database
from webhooks import repository as repo
from webhooks.delivery import Policy, Sender, _send
from webhooks.service import fan_out
from webhooks.signing import SecretBox

# The timeout leaves room for the first test, which may start the stack.
pytestmark = [pytest.mark.integration, pytest.mark.long, pytest.mark.timeout(900)]


async def test_sigkill_mid_schedule_then_restart_completes_once_per_attempt(stack: Stack) -> None:
    async with endpoint(stack, Receiver(plan=[500, 500])) as (tenant, receiver, _, created):
        webhook_id = created.data["webhook_id"]
        await create_customer(tenant)
        # Wait for the first failed attempt to be recorded, then kill the service while the
        # next attempt is only a row in the schedule.
        for _ in range(200):
            rows = await deliveries_of(stack, webhook_id)
            if rows and rows[0]["attempts"] >= 1 and rows[0]["lease_until"] is None:
                break
            await asyncio.sleep(0.05)
        old = stack.procs["webhooks"]
        stack.suite.stop_proc(old, signal.SIGKILL)
        assert old.popen.returncode == -signal.SIGKILL
        killed_at_attempts = (await deliveries_of(stack, webhook_id))[0]["attempts"]
        assert killed_at_attempts < 3
        # the next attempt falls due while no worker runs (read from the row, not slept for)
        for _ in range(600):
            due = await _rows(
                stack,
                "SELECT next_attempt_at < now() AS due FROM webhooks.deliveries WHERE webhook_id = $1",
                webhook_id,
            )
            if due[0]["due"]:
                break
            await asyncio.sleep(0.05)
        assert due[0]["due"], "the next attempt never fell due"
        assert len(receiver.received) == killed_at_attempts

        new = stack.suite.start("webhooks", old.port)
        stack.procs["webhooks"] = new
        await asyncio.to_thread(stack.suite.wait_ready, [new], 120)

        rows = await wait_delivery(stack, webhook_id, "succeeded", timeout=30)
        assert [(d["status"], d["attempts"], d["last_status_code"]) for d in rows] == [("succeeded", 3, 200)]
        attempts = await attempts_of(stack, rows[0]["id"])
        assert [(a["attempt"], a["status_code"]) for a in attempts] == [(1, 500), (2, 500), (3, 200)]
        # Exactly one request per attempt reached the receiver, and one success: no fourth
        # within the longest gap of the retry schedule (a duplicate would come sooner).
        gap = max(float(x) for x in stack.env["SLUICE_WEBHOOKS_RETRY_SCHEDULE"].split(","))
        await receiver.wait_for(4, timeout=gap)
        assert [r.answered for r in receiver.received] == [500, 500, 200]
        event_ids = {r.headers["x-service-webhook-id"] for r in receiver.received}
        assert len(event_ids) == 1


@pytest.fixture
def production_like_webhooks(stack: Stack):  # type: ignore[no-untyped-def]
    """A webhooks process with private targets disallowed, on its own database and topics."""
    prefix = "ssrf" + uuid.uuid4().hex[:8]
    url = create_database(stack.stores.database_url, "sluice_wh_" + uuid.uuid4().hex[:10])
    migrate("admin", url)  # identity.tenants: webhooks holds a disabled tenant's deliveries
    migrate("webhooks", url)
    proc = stack.suite.start(
        "webhooks",
        free_port(),
        {
            "SLUICE_DATABASE_URL": url,
            "SLUICE_TOPIC_PREFIX": prefix,
            "SLUICE_WEBHOOKS_ALLOW_PRIVATE_TARGETS": "false",
        },
        instance="webhooks-" + prefix,
    )
    try:
        stack.suite.wait_ready([proc], timeout=120)
        yield prefix
    finally:
        stack.suite.stop_proc(proc)
        drop_database(url)


async def test_private_targets_refused_at_registration(stack: Stack, production_like_webhooks: str) -> None:
    cases = {
        "http://example.com/hook": "https_required",
        "http://127.0.0.1:9/hook": "https_required",
        "https://127.0.0.1/hook": "private_target",
        "https://localhost:8443/hook": "private_target",
        "https://10.0.0.7/hook": "private_target",
        "https://192.168.1.20/hook": "private_target",
        "https://169.254.169.254/latest/meta-data/": "private_target",
        "https://[::1]/hook": "private_target",
        "https://[fd00:ec2::254]/": "private_target",
        "ftp://example.com/": "invalid_url",
    }
    async with webhook_commands(stack, prefix=production_like_webhooks) as wh:
        results = await asyncio.gather(
            *(
                wh.call(CreateWebhook, "tenant-ssrf", webhook_id=new_id("we"), endpoint_url=url)
                for url in cases
            )
        )
        for (url, reason), result in zip(cases.items(), results, strict=True):
            assert result.status == 400, (url, result)
            assert result.error is not None and result.error.code == "invalid_request"
            assert result.error.details == {"field": "endpoint_url", "reason": reason}, url
        accepted = await wh.call(
            CreateWebhook, "tenant-ssrf", webhook_id=new_id("we"), endpoint_url="https://93.184.216.34/hook"
        )
        assert accepted.status == 201, accepted


async def test_non_global_targets_refused_at_registration(
    stack: Stack, production_like_webhooks: str
) -> None:
    """Site-local fec0::1 passed Python 3.11's is_global and was accepted
    as a public target; every special-purpose block and all IPv6 outside 2000::/3 is refused."""
    refused = [
        "https://[fec0::1]/h",
        "https://[fec0:1:2::3]:8443/h",
        "https://[2001:db8::1]/h",
        "https://[3fff::1]/h",
        "https://[5f00::1]/h",
        "https://[2001:20::1]/h",
        "https://[2002:5db8:d822::1]/h",
        "https://[::ffff:5db8:d822]/h",
        "https://[4000::1]/h",
        "https://192.0.2.7/h",
        "https://198.18.0.1/h",
        "https://192.88.99.1/h",
    ]
    async with webhook_commands(stack, prefix=production_like_webhooks) as wh:
        results = await asyncio.gather(
            *(
                wh.call(CreateWebhook, "tenant-ssrf", webhook_id=new_id("we"), endpoint_url=url)
                for url in refused
            )
        )
        answers = {
            url: (r.status, r.error.details if r.error else None)
            for url, r in zip(refused, results, strict=True)
        }
        assert answers == {
            url: (400, {"field": "endpoint_url", "reason": "private_target"}) for url in refused
        }
        accepted = await wh.call(
            CreateWebhook,
            "tenant-ssrf",
            webhook_id=new_id("we"),
            endpoint_url="https://[2606:4700:4700::1111]/h",
        )
        assert accepted.status == 201, accepted


async def test_delivery_rechecks_the_target_and_connects_to_the_vetted_address() -> None:
    receiver = Receiver().start()
    try:
        strict = Sender(Policy(schedule=(1,), jitter=0, timeout_s=5, disable_after_s=60, allow_private=False))
        try:
            # A target that became private after registration (DNS rebinding) is not contacted.
            out = await strict.post(f"https://127.0.0.1:{receiver.port}/hook", b"{}", {})
            assert (out.ok, out.status_code, out.error) == (False, None, "private_target")
            out = await strict.post(f"https://localhost:{receiver.port}/hook", b"{}", {})
            assert out.error == "private_target"
        finally:
            await strict.close()
        assert receiver.received == []
        local = Sender(Policy(schedule=(1,), jitter=0, timeout_s=5, disable_after_s=60, allow_private=True))
        try:
            out = await local.post(f"http://localhost:{receiver.port}/hook", b'{"a":1}', {"x-test": "1"})
        finally:
            await local.close()
        assert out.ok and out.status_code == 200 and out.latency_ms >= 0
        got = receiver.received[0]
        # Connected to the resolved address; the name is kept in the Host header.
        assert got.headers["host"] == f"localhost:{receiver.port}"
        assert json.loads(got.body) == {"a": 1} and got.headers["content-type"] == "application/json"
    finally:
        receiver.stop()


async def test_connection_refused_is_retried_within_the_attempt_then_fails() -> None:
    port = free_port()
    sender = Sender(Policy(schedule=(1,), jitter=0, timeout_s=5, disable_after_s=60, allow_private=True))
    try:
        out = await sender.post(f"http://127.0.0.1:{port}/hook", b"{}", {})
    finally:
        await sender.close()
    assert not out.ok and out.status_code is None and out.error and out.error.startswith("connect_failed: ")
    # tenacity waited between its three tries (0.2 s, then 0.4 s).
    assert out.latency_ms >= 500


@pytest.fixture
async def engine(stack: Stack) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(stack.stores.database_url, 2)
    yield engine
    await engine.dispose()


async def test_send_called_directly_skips_what_already_succeeded(stack: Stack, engine: AsyncEngine) -> None:
    async with endpoint(stack) as (tenant, receiver, _, created):
        webhook_id = created.data["webhook_id"]
        await create_customer(tenant)
        rows = await wait_delivery(stack, webhook_id, "succeeded")
        assert len(receiver.received) == 1
        box = SecretBox(KeyRing.parse(stack.env["SLUICE_ENCRYPTION_KEYS"]))
        sender = Sender(Policy(schedule=(1,), jitter=0, timeout_s=5, disable_after_s=60, allow_private=True))
        try:
            async with transaction(sessionmaker(engine)) as session:
                (row,) = await repo.load_claimed(session, [rows[0]["id"]])
                assert row.status == "succeeded"
                assert await _send(session, sender, box, row) is None
        finally:
            await sender.close()
        assert len(receiver.received) == 1
        assert [a["attempt"] for a in await attempts_of(stack, rows[0]["id"])] == [1]


async def test_a_target_rebound_to_a_private_address_is_recorded_as_refused(
    stack: Stack, engine: AsyncEngine
) -> None:
    """What an operator reads after a refused attempt (docs/security.md, "Webhook targets:
    what is checked when"): the attempt row and the delivery carry ``private_target``, no
    status code, and the delivery is pending for its next attempt. The delivery is leased
    here (so the service's own worker leaves it alone) and attempted through ``_send`` with
    the endpoint's name answered by a real DNS server that now gives 127.0.0.1."""
    dns = await DnsServer().start()
    async with endpoint(stack) as (tenant, receiver, _, created):
        webhook_id = created.data["webhook_id"]
        event = customer_created(tenant.tenant_id, "cus_rebind")
        dns.answers["rebind.test"] = ["127.0.0.1"]
        box = SecretBox(KeyRing.parse(stack.env["SLUICE_ENCRYPTION_KEYS"]))
        strict = Policy(schedule=(60,), jitter=0, timeout_s=5, disable_after_s=3600, allow_private=False)
        sender = Sender(strict, resolver=DnsResolver(dns.port))
        try:
            async with transaction(sessionmaker(engine)) as session:
                (delivery_id,) = await fan_out(session, [event], max_attempts=4)
                (row,) = await repo.claim(session, [delivery_id], lease_s=60.0, worker="rebind")
            # The name as registered was public; the row now names it (the URL is the tenant's).
            rebound = dataclasses.replace(row, url=f"https://rebind.test:{receiver.port}/hook")
            async with transaction(sessionmaker(engine)) as session:
                out = await _send(session, sender, box, rebound)
        finally:
            await sender.close()
            dns.stop()
        assert out is not None and (out.status_code, out.error) == (None, "private_target")
        assert receiver.received == [] and dns.asked == [("rebind.test", "A"), ("rebind.test", "AAAA")]
        attempts = await attempts_of(stack, delivery_id)
        assert [(a["attempt"], a["status_code"], a["error"]) for a in attempts] == [
            (1, None, "private_target")
        ]
        delivery = [d for d in await deliveries_of(stack, webhook_id) if d["id"] == delivery_id]
        assert [(d["status"], d["last_status_code"], d["last_error"]) for d in delivery] == [
            ("pending", None, "private_target")
        ]


async def test_an_attempt_left_by_a_dead_worker_is_closed_and_taken_over(
    stack: Stack, engine: AsyncEngine
) -> None:
    """A worker claims (lease 1 s) and dies before sending: the service takes the delivery over
    when the lease expires, with the next attempt number; the lost attempt is marked."""
    async with endpoint(stack) as (tenant, receiver, _, created):
        webhook_id = created.data["webhook_id"]
        event = customer_created(tenant.tenant_id, "cus_lease")
        async with transaction(sessionmaker(engine)) as session:
            (delivery_id,) = await fan_out(session, [event], max_attempts=4)
            claimed = await repo.claim(session, [delivery_id], lease_s=1.0, worker="doomed")
            assert [(r.id, r.attempts) for r in claimed] == [(delivery_id, 1)]
        # ... and the doomed worker never sends nor records anything.
        rows = await wait_delivery(stack, webhook_id, "succeeded", timeout=20)
        assert [(d["status"], d["attempts"]) for d in rows] == [("succeeded", 2)]
        attempts = await attempts_of(stack, delivery_id)
        assert [(a["attempt"], a["worker"], a["status_code"]) for a in attempts] == [
            (1, "doomed", None),
            (2, attempts[1]["worker"], 200),
        ]
        assert attempts[0]["error"].startswith("interrupted") and attempts[1]["worker"] != "doomed"
        assert len(receiver.for_event(event.event_id)) == 1


async def test_an_outcome_recorded_after_its_lease_was_taken_over_is_kept_on_its_attempt(
    stack: Stack, engine: AsyncEngine
) -> None:
    """A worker claims (lease 1 s) and is slow: the service takes the delivery over and
    delivers it (attempt 2) while the attempt 1 is written as interrupted. The slow worker's
    outcome then arrives: it lands on attempt 1 (it was sent after all) and moves nothing."""
    async with endpoint(stack) as (tenant, receiver, _, created):
        webhook_id = created.data["webhook_id"]
        event = customer_created(tenant.tenant_id, "cus_late")
        sessions = sessionmaker(engine)
        async with transaction(sessions) as session:
            (delivery_id,) = await fan_out(session, [event], max_attempts=4)
            (slow,) = await repo.claim(session, [delivery_id], lease_s=1.0, worker="slowpoke")
        assert (slow.attempts, slow.leased_by) == (1, "slowpoke")
        await wait_delivery(stack, webhook_id, "succeeded", timeout=20)
        before = await attempts_of(stack, delivery_id)
        assert (before[0]["attempt"], before[0]["worker"], before[0]["status_code"]) == (1, "slowpoke", None)
        assert before[0]["error"].startswith("interrupted"), before[0]
        late = repo.Finished(
            delivery_id, 1, webhook_id, "slowpoke", before[0]["started_at"], 503, 40, "http_503", False, 5.0
        )
        async with transaction(sessions) as session:
            moved, disabled = await repo.record_outcomes(session, [late], disable_after_s=432000)
        assert (moved, disabled) == (0, [])
        after = await attempts_of(stack, delivery_id)
        assert [(a["attempt"], a["status_code"], a["error"]) for a in after] == [
            (1, 503, "http_503"),
            (2, 200, None),
        ]
        (row,) = await deliveries_of(stack, webhook_id)
        assert (row["status"], row["attempts"], row["lease_until"]) == ("succeeded", 2, None)
        assert len(receiver.for_event(event.event_id)) == 1

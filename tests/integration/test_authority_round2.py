"""Authority, round 2 (docs/security.md, "Transfer ids, live and replies"), attacked on the real
stack with what the gateway's principal may write (``compliance.commands``, ``ledger.reads``).

On the tree before (fd9597e), each of these worked:

1. a CreateTransfer reusing a completed transfer's id: compliance allowed and counted it but held
   nothing for it, the ledger failed it on the transfers' primary key and released the completed
   transfer's hold: a daily cap of 30 let 49.97 move;
2. a production transfer of a tenant never enabled for live, stamped ``live_enabled``: compliance
   signed an allow for it;
3. a read or a customer naming the journal's anchors topic as its reply address: the ledger and
   compliance put their results there, kept forever, and verify_journal answered
   ``anchor_signature_invalid`` from then on;
4. an unsigned ``ReleaseAllowance`` on ``compliance.releases``, or a forged ``transfer.updated``
   on ``events``: cap given back for a completed transfer, and a made-up transfer delivered to
   the partner and served by /v1/events (authority implied by the topic).

Now each is refused, names its reason, is counted and visible to an operator (the decision
log, the dead letters), and leaves money, caps and the anchors as they were. The pure decisions:
tests/unit/test_transfer_ids.py, test_reply_topics.py and test_authority.py.
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import msgspec
import pytest
from aiokafka import AIOKafkaProducer

from common.authority import SigningKey
from common.contracts import Result
from common.contracts.base import encode
from common.contracts.commands import (
    RELEASE_PREFIX,
    CreateCustomer,
    CreateTransfer,
    GetResource,
    ReleaseAllowance,
    partition_key,
)
from common.contracts.events import TransferUpdated
from common.ids import new_id
from common.topics import Topics
from tests.conftest import AUTHORITY, Stack, make_tenant
from tests.integration.test_authority import counter
from tests.support.admin import _read, admin_ok
from tests.support.flows import book, created, funded, send, wait_state
from tests.support.ledger import LedgerKit, allow, ledger_key, open_kit
from tests.support.wait import eventually_async
from tests.support.webhooks import create_customer, endpoint

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

D = Decimal
TOPICS = Topics("sluice")


def _reason(r: Result) -> str | None:
    return r.error.details.get("reason") if r.error else None


async def _used(kit: LedgerKit, tenant_id: str, mode: str = "sandbox") -> Decimal:
    """What the tenant's days have used of their daily caps (compliance's record)."""
    sql = "SELECT coalesce(sum(used), 0) FROM compliance.cap_usage WHERE tenant_id = $1 AND mode = $2"
    return D(await kit.db.fetchval(sql, tenant_id, mode))


async def _produce(stack: Stack, topic: str, value: bytes, key: str) -> tuple[str, int, int]:
    """As any principal allowed to write ``topic`` (the test stack's broker has no ACLs; who
    may write what is tests/integration/test_kafka_acls.py's): where the record landed."""
    producer = AIOKafkaProducer(bootstrap_servers=stack.stores.kafka_bootstrap, enable_idempotence=False)
    await producer.start()
    try:
        sent = await producer.send_and_wait(topic, value, key=key.encode())
    finally:
        await producer.stop()
    return topic, sent.partition, sent.offset


def _reusing(kit: LedgerKit, transfer_id: str, src: str, dst: str, amount: str) -> CreateTransfer:
    """A transfer naming ``transfer_id``, under a command id and idempotency key of its own."""
    return msgspec.structs.replace(kit.book_cmd(src, dst, amount), transfer_id=transfer_id, decision=None)


async def _released_once(stack: Stack, before: float) -> None:
    """Wait until compliance consumed one more release than ``before``."""
    url = [stack.procs["compliance"].url]

    async def seen() -> bool:
        got = await asyncio.to_thread(
            counter, url, "sluice_messages_consumed_total", consumer="compliance-releases"
        )
        return got >= before + 1

    await eventually_async(seen, timeout=30, what="compliance consuming the release")


async def test_a_reused_transfer_id_lifts_no_cap_and_releases_nothing(stack: Stack) -> None:
    t = make_tenant(stack)
    cap = {"tenant_id": t.tenant_id, "mode": "sandbox", "per_transfer": "30", "daily": "30"}
    assert stack.admin_call("set_transfer_cap", **cap).status_code == 200
    a, b = funded(t, "100.00")["wallet_id"], funded(t, "1.00")["wallet_id"]
    done = created(send(t, "/v1/transfers", book(a, b, "20.00")))["transfer_id"]
    wait_state(t, f"/v1/transfers/{done}", "completed")
    compliance, ledgers = [stack.procs["compliance"].url], [p.url for p in stack.ledgers]
    async with open_kit(stack) as kit:
        kit.tenant_id = t.tenant_id
        assert await _used(kit, t.tenant_id) == D(20)
        reused = counter(compliance + ledgers, "sluice_transfer_id_reused_total")
        # 1. on compliance's topic, as the gateway may write it: refused, nothing counted
        forged = _reusing(kit, done, a, b, "10.00")
        r = await kit.rpc.call(TOPICS.compliance_commands, forged, key=partition_key(forged), timeout=20)
        assert r.status == 403 and _reason(r) == "transfer_id_reused", r
        # 2. signed by compliance (as a decision from before the rule would be): the ledger
        # refuses the id and gives nothing back
        signed = msgspec.structs.replace(_reusing(kit, done, a, b, "10.00"), decision=allow())
        r = await kit.send(signed)
        assert r.status == 403 and _reason(r) == "transfer_id_reused", r
        # 3. the release the ledger published for such a failure before (signed by the ledger,
        # as it signs every release): it names the failed command, whose hold there is none, so
        # it gives nothing back
        consumed = counter(compliance, "sluice_messages_consumed_total", consumer="compliance-releases")
        release = ReleaseAllowance(
            command_id=f"{RELEASE_PREFIX}{signed.command_id}", ctx=kit.ctx(reply_to=None), transfer_id=done
        )
        release = ledger_key().sign(release)
        await _produce(stack, TOPICS.compliance_releases, encode(release), t.tenant_id)
        await _released_once(stack, consumed)
        # caps and money as they were: the cap still refuses what it refused
        assert await _used(kit, t.tenant_id) == D(20)
        hold = "SELECT released_at FROM compliance.holds WHERE transfer_id = $1"
        assert await kit.db.fetchval(hold, done) is None
        assert await kit.balances(a) == (D("80.00"), D(0))
        assert await kit.balances(b) == (D("21.00"), D(0))
        over = send(t, "/v1/transfers", book(a, b, "20.00"))
        assert (
            over.status_code == 403 and over.json()["error"]["details"]["reason"] == "transfer_cap_exceeded"
        )
        # counted, and in the decision log an operator reads
        assert counter(compliance + ledgers, "sluice_transfer_id_reused_total") - reused == 2
        items = admin_ok(stack, "list_decisions", tenant_id=t.tenant_id, limit=20)["items"]
        mine = [i for i in items if i["command_id"] == forged.command_id]
        assert [(i["outcome"], i["reason"]) for i in mine] == [("refuse", "transfer_id_reused")]


async def test_live_is_read_from_admins_record_not_the_gateways_stamp(stack: Stack) -> None:
    """A tenant with a production route and cap that an operator never enabled for live: a
    production transfer stamped ``live_enabled`` is refused ``tenant_not_live``."""
    t = make_tenant(stack)
    route = {"tenant_id": t.tenant_id, "mode": "production", "rail": "provider_wallet", "currency": "USDC"}
    assert stack.admin_call("approve_route", **route).status_code == 200
    cap = {"tenant_id": t.tenant_id, "mode": "production", "per_transfer": "100", "daily": "1000"}
    assert stack.admin_call("set_transfer_cap", **cap).status_code == 200
    assert admin_ok(stack, "get_tenant", tenant_id=t.tenant_id)["live_enabled"] is False
    compliance = [stack.procs["compliance"].url]
    async with open_kit(stack) as kit:
        kit.tenant_id, kit.mode = t.tenant_id, "production"
        before = counter(compliance, "sluice_stamp_disagreed_total", field="live_enabled")
        stamped = msgspec.structs.replace(
            kit.book_cmd(new_id("wal"), new_id("wal"), "10.00", live_enabled=True), decision=None
        )
        r = await kit.rpc.call(TOPICS.compliance_commands, stamped, key=partition_key(stamped), timeout=20)
        assert r.status == 403 and _reason(r) == "tenant_not_live", r
        row = "SELECT outcome, reason FROM compliance.decisions WHERE command_id = $1"
        decided = await kit.db.fetchrow(row, stamped.command_id)
        assert (decided["outcome"], decided["reason"]) == ("refuse", "tenant_not_live")
        moved = "SELECT count(*) FROM ledger.transfers WHERE id = $1"
        assert await kit.db.fetchval(moved, stamped.transfer_id) == 0
        assert counter(compliance, "sluice_stamp_disagreed_total", field="live_enabled") - before == 1


async def test_no_answer_lands_on_the_anchors_topic(stack: Stack) -> None:
    """A read on the ledger's reads topic and a customer on compliance's commands topic, each
    naming the anchors topic as its reply address: refused before they are handled, dead-lettered
    (``authority_invalid``, why ``reply_to``), counted, and nothing is published there."""
    ledgers, compliance = [p.url for p in stack.ledgers], [stack.procs["compliance"].url]
    async with open_kit(stack) as kit:
        t = make_tenant(stack)
        kit.tenant_id = t.tenant_id
        anchors = TOPICS.journal_anchors
        read = GetResource(
            command_id=new_id("cmd"),
            ctx=kit.ctx(reply_to=anchors),
            resource="transfers",
            resource_id=new_id("tr"),
        )
        customer = msgspec.structs.replace(kit.customer_cmd(), ctx=kit.ctx(reply_to=anchors), decision=None)
        assert isinstance(customer, CreateCustomer)
        was = _refused_for_reply_to(ledgers, compliance)
        before = {"ledger": was[0], "compliance": was[1]}
        await _produce(stack, TOPICS.ledger_reads, encode(read), t.tenant_id)
        await _produce(stack, TOPICS.compliance_commands, encode(customer), t.tenant_id)

        async def refused_both() -> bool:
            now = await asyncio.to_thread(_refused_for_reply_to, ledgers, compliance)
            return now == (before["ledger"] + 1, before["compliance"] + 1)

        await eventually_async(refused_both, timeout=60, what="both refusals counted")
        ids = {read.command_id, customer.command_id}
        await _no_result_on(stack, anchors, ids)
        await _dead_lettered(stack, {read.ctx.request_id, customer.ctx.request_id})
        # the customer was never decided, nor created
        decided = "SELECT count(*) FROM compliance.decisions WHERE command_id = $1"
        assert await kit.db.fetchval(decided, customer.command_id) == 0


def _refused_for_reply_to(ledgers: list[str], compliance: list[str]) -> tuple[float, float]:
    """The ledgers' and compliance's refusals for a reply address that is no reply topic."""
    name = "sluice_authority_refused_total"
    return (
        counter(ledgers, name, service="ledger", why="reply_to"),
        counter(compliance, name, service="compliance", why="reply_to"),
    )


async def _no_result_on(stack: Stack, topic: str, command_ids: set[str]) -> None:
    """No record of ``topic`` answers one of ``command_ids`` (read from the topic's start)."""

    def answers(record: dict[str, Any]) -> bool:
        return record.get("command_id") in command_ids

    found = await _read(stack, topic, answers, lambda got: bool(got), timeout=8)
    assert found == [], found


async def _dead_lettered(stack: Stack, request_ids: set[str]) -> None:
    """Each refusal is a dead letter an operator lists, naming authority_invalid."""

    def letters() -> list[dict[str, Any]]:
        items = stack.admin_call("list_dead_letters", limit=100).json()["data"]["items"]
        return [i for i in items if i["request_id"] in request_ids and "authority_invalid" in str(i["error"])]

    async def all_there() -> bool:
        return len(await asyncio.to_thread(letters)) == len(request_ids)

    await eventually_async(all_there, timeout=60, what="the refused commands among admin's dead letters")


async def test_an_unsigned_release_or_usage_signal_gives_no_cap_back(stack: Stack) -> None:
    """Compliance's half of attack 4 above: a ``ReleaseAllowance`` on ``compliance.releases`` naming a
    completed transfer's command (unsigned, or signed with compliance's key) and a forged
    ``transfer.updated state=failed`` for it on ``events`` each gave its 20.00 back under a daily
    cap of 30. Now each is dead-lettered ``authority_invalid``, counted, and the cap stays
    exhausted."""
    t = make_tenant(stack)
    cap = {"tenant_id": t.tenant_id, "mode": "sandbox", "per_transfer": "30", "daily": "30"}
    assert stack.admin_call("set_transfer_cap", **cap).status_code == 200
    a, b = funded(t, "100.00")["wallet_id"], funded(t, "1.00")["wallet_id"]
    done = created(send(t, "/v1/transfers", book(a, b, "20.00")))["transfer_id"]
    wait_state(t, f"/v1/transfers/{done}", "completed")
    compliance = [stack.procs["compliance"].url]
    async with open_kit(stack) as kit:
        kit.tenant_id = t.tenant_id
        held = "SELECT command_id FROM compliance.holds WHERE transfer_id = $1"
        command_id = await kit.db.fetchval(held, done)
        assert command_id and await _used(kit, t.tenant_id) == D(20)
        before = _refused(compliance, "compliance")
        ctx = kit.ctx(reply_to=None)
        unsigned = ReleaseAllowance(command_id=f"{RELEASE_PREFIX}{command_id}", ctx=ctx, transfer_id=done)
        wrong = SigningKey.parse(AUTHORITY["SLUICE_COMPLIANCE_SIGNING_KEY"], "compliance").sign(unsigned)
        failed = _forged_update(t.tenant_id, done, "failed", "20.00")
        sent = [
            await _produce(stack, TOPICS.compliance_releases, encode(unsigned), t.tenant_id),
            await _produce(stack, TOPICS.compliance_releases, encode(wrong), t.tenant_id),
            await _produce(stack, TOPICS.events, encode(failed), t.tenant_id),
        ]
        # counted once compliance finished with them (the one barrier on both topics)
        await _counted(compliance, "compliance", before, {"unsigned": 2, "wrong_signer": 1})
        assert await _used(kit, t.tenant_id) == D(20)
        hold = "SELECT released_at FROM compliance.holds WHERE transfer_id = $1"
        assert await kit.db.fetchval(hold, done) is None
        over = send(t, "/v1/transfers", book(a, b, "20.00"))
        assert (
            over.status_code == 403 and over.json()["error"]["details"]["reason"] == "transfer_cap_exceeded"
        ), over.text
        await _lettered(stack, "compliance", sent)


async def test_a_forged_event_is_neither_stored_listed_nor_delivered(stack: Stack) -> None:
    """The partner's half of attack 4 above: a forged ``transfer.updated`` (1,000,000.00 completed) on
    ``events`` was delivered to the partner, validly signed, and served by /v1/events. Now
    webhooks refuses it before storing (``authority_invalid``, counted); the ledger's own events,
    published after it on the same partition, still arrive."""
    webhooks = [stack.procs["webhooks"].url]
    async with endpoint(stack) as ep:
        t = ep.tenant
        before = _refused(webhooks, "webhooks")
        unsigned = _forged_update(t.tenant_id, new_id("tr"), "completed", "1000000.00")
        altered = ledger_key().sign(_forged_update(t.tenant_id, new_id("tr"), "completed", "1.00"))
        altered.data["amount"] = "1000000.00"  # the ledger's signature, over another amount
        forged = {unsigned.event_id, altered.event_id}
        sent = [await _produce(stack, TOPICS.events, encode(e), t.tenant_id) for e in (unsigned, altered)]
        # the ledger's events after them (same tenant: the same partition) are delivered: by
        # then webhooks has handled the forged records
        customer = await create_customer(t)

        async def delivered() -> bool:
            bodies = [json.loads(r.body) for r in list(ep.receiver.received)]
            return any(b["data"].get("customer_id") == customer for b in bodies)

        await eventually_async(delivered, timeout=60, what="the ledger's customer.created delivered")
        assert not [r for r in ep.receiver.received if r.headers.get("x-service-webhook-id") in forged]
        for event_id in forged:
            got = await asyncio.to_thread(t.get, f"/v1/events/{event_id}")
            assert got.status_code == 404, got.text
        listed = await asyncio.to_thread(t.get, "/v1/events?limit=100")
        assert {e["id"] for e in listed.json()["data"]["items"]}.isdisjoint(forged)
        await _counted(webhooks, "webhooks", before, {"unsigned": 1, "bad_signature": 1})
        await _lettered(stack, "webhooks", sent)


def _forged_update(tenant_id: str, transfer_id: str, state: str, amount: str) -> TransferUpdated:
    """A ``transfer.updated`` as the ledger would publish it, but made by someone else."""
    return TransferUpdated(
        event_id=new_id("evt"),
        tenant_id=tenant_id,
        mode="sandbox",
        created_at=datetime.now(UTC).isoformat(),
        request_id=new_id("req"),
        data={"transfer_id": transfer_id, "state": state, "previous_state": "processing", "amount": amount},
    )


def _refused(urls: list[str], service: str) -> dict[str, float]:
    """``service``'s authority refusals so far, by why."""
    whys = ("unsigned", "wrong_signer", "bad_signature")
    return {w: counter(urls, "sluice_authority_refused_total", service=service, why=w) for w in whys}


async def _counted(urls: list[str], service: str, before: dict[str, float], more: dict[str, int]) -> None:
    """Wait until ``service`` counted exactly ``more`` refusals (by why) since ``before``."""
    want = {w: before[w] + more.get(w, 0) for w in before}

    async def seen() -> bool:
        return await asyncio.to_thread(_refused, urls, service) == want

    await eventually_async(seen, timeout=60, what=f"{service} counting the forgeries")


async def _lettered(stack: Stack, service: str, sent: list[tuple[str, int, int]]) -> None:
    """Each record ``sent`` is a dead letter of ``service`` an operator lists, naming
    authority_invalid (never redriven: admin.actions.origins)."""
    want = {(service, *where) for where in sent}

    def letters() -> set[tuple[str, str, int, int]]:
        items = stack.admin_call("list_dead_letters", limit=100).json()["data"]["items"]
        return {
            (i["service"], i["topic"], i["partition"], i["offset"])
            for i in items
            if "authority_invalid" in str(i["error"])
        }

    async def all_there() -> bool:
        return want <= await asyncio.to_thread(letters)

    await eventually_async(all_there, timeout=60, what=f"{service}'s refusals among admin's dead letters")

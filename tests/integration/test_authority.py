"""Authority between services (docs/security.md, "no single point of trust"), attacked on the
real stack.

Each test does what an attacker holding one internal component did on main (2026-11-26):
write the ledger's or compliance's commands topic directly (the gateway's principal could), or
the dead-letter topic. On main the forged transfer moved money, the forged review took effect
and the forged dead letter was redriven to the partner, signed. Now each is refused, named
``authority_invalid`` (or its redrive reason), counted, and changes nothing; the genuine path
beside it still works.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from decimal import Decimal

import httpx
import msgspec
import pytest
from aiokafka import AIOKafkaProducer
from prometheus_client.parser import text_string_to_metric_families

from common import authority
from common.broker import DeadLetter
from common.contracts import Result
from common.contracts.commands import ReleaseAllowance, SetTransferCap
from common.contracts.events import TransferUpdated
from common.ids import new_id
from common.topics import Topics
from tests.conftest import Stack, Tenant
from tests.support.ledger import LedgerKit, allow, ledger_invariants, open_kit
from tests.support.wait import eventually, eventually_async

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

D = Decimal


@pytest.fixture
async def kit(stack: Stack) -> AsyncIterator[LedgerKit]:
    async with open_kit(stack) as k:
        await k.watch_events()
        yield k
        await ledger_invariants(k.db, k.tenant_id)


def counter(urls: list[str], name: str, **labels: str) -> float:
    """The sum of counter ``name`` (its ``_total`` sample) over ``urls``' /metrics, for ``labels``."""
    total = 0.0
    for url in urls:
        text = httpx.get(url + "/metrics", timeout=10).text
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                    total += sample.value
    return total


def refused(r: Result, why: str) -> None:
    assert r.status == 403, r
    assert r.error is not None and r.error.details == {"reason": "authority_invalid", "why": why}, r.error


async def test_a_forged_decision_moves_no_money(stack: Stack, kit: LedgerKit) -> None:
    """A CreateTransfer with ``decision: allow`` produced straight to the ledger's
    topic moved 50 USDC on main. Unsigned, signed with a key compliance does not hold, signed
    by admin, expired, or altered after compliance signed it: each is refused, nothing moves,
    and each is dead-lettered and counted."""
    a, b = await kit.funded_wallet("100.00"), await kit.funded_wallet("0")
    ledgers = [p.url for p in stack.ledgers]
    before = counter(ledgers, "sluice_authority_refused_total", service="ledger")
    settings = stack.settings()
    evil = authority.SigningKey.parse(authority.new_signing_setting("compliance", "evil"), "compliance")
    admin = settings.signing_key("admin")
    compliance = settings.signing_key("compliance")

    def forged() -> object:
        return kit.book_cmd(a["wallet_id"], b["wallet_id"], "50", decision=allow())

    genuine_then_altered = msgspec.structs.replace(compliance.sign(forged()), amount="60")  # type: ignore[type-var]
    attacks = [
        (forged(), "unsigned"),
        (evil.sign(forged()), "unknown_key"),  # type: ignore[type-var]
        (admin.sign(forged()), "wrong_signer"),  # type: ignore[type-var]
        (compliance.sign(forged(), now=0), "expired"),  # type: ignore[type-var]
        (genuine_then_altered, "bad_signature"),
    ]
    for cmd, why in attacks:
        refused(await kit.send(cmd, sign=False), why)  # type: ignore[arg-type]
    assert await kit.balances(a["wallet_id"]) == (D("100.00"), D(0))
    assert await kit.balances(b["wallet_id"]) == (D(0), D(0))
    ids = [c.transfer_id for c, _ in attacks]  # type: ignore[attr-defined]
    assert await kit.db.fetchval("SELECT count(*) FROM ledger.transfers WHERE id = ANY($1)", ids) == 0
    assert not [e for e in kit.events if {e["data"].get("id"), e["data"].get("transfer_id")} & set(ids)]
    # counted by the ledgers (each attack once)
    assert counter(ledgers, "sluice_authority_refused_total", service="ledger") - before == len(attacks)

    # visible to an operator: each is a dead letter naming authority_invalid, never redriven
    def letters() -> list[dict[str, object]]:
        r = stack.admin_call("list_dead_letters", service="ledger", limit=100)
        items = r.json()["data"]["items"]
        return [i for i in items if "authority_invalid" in str(i["error"]) and i["request_id"] in rids]

    rids = {c.ctx.request_id for c, _ in attacks}  # type: ignore[attr-defined]
    found = await eventually_async(
        lambda: asyncio.to_thread(lambda: len(letters()) == len(attacks) and letters()),
        timeout=60,
        what="the refused commands among admin's dead letters",
    )
    r = stack.admin_call("redrive_dead_letters", dead_letter_ids=[i["dead_letter_id"] for i in found])
    assert r.status_code == 200, r.text
    assert r.json()["data"]["redriven"] == []
    assert {x["reason"] for x in r.json()["data"]["refused"]} == {"never_redriven"}

    # the genuine path beside it: signed by compliance, applied once, a replay moves nothing more
    real = compliance.sign(kit.book_cmd(a["wallet_id"], b["wallet_id"], "10", decision=allow()))
    first = await kit.send(real, sign=False)
    again = await kit.send(real, sign=False)
    assert first.status == 201 and again.status == 201, (first, again)
    assert again.data["transfer_id"] == first.data["transfer_id"]
    assert await kit.balances(b["wallet_id"]) == (D("10.00"), D(0))


async def test_a_forged_operator_command_changes_nothing(stack: Stack, kit: LedgerKit) -> None:
    """An operator's review is admin's to give: unsigned, or signed by compliance, a review of
    a transfer parked for review is refused and it stays in review; admin's signature works."""
    a, b = await kit.funded_wallet("100.00"), await kit.funded_wallet("0")
    parked = await kit.send(kit.book_cmd(a["wallet_id"], b["wallet_id"], "30", decision=allow("review")))
    assert parked.status == 201 and parked.data["state"] == "in_review", parked
    tid = parked.data["transfer_id"]
    compliance = stack.settings().signing_key("compliance")
    refused(await kit.send(kit.review_cmd(tid, "approve"), sign=False), "unsigned")
    refused(await kit.send(compliance.sign(kit.review_cmd(tid, "approve")), sign=False), "wrong_signer")
    assert await kit.state(tid) == "in_review"
    assert await kit.balances(b["wallet_id"]) == (D(0), D(0))
    ok = await kit.send(kit.review_cmd(tid, "approve"))  # signed by admin (LedgerKit.signed)
    assert ok.status == 200 and ok.data["state"] in ("processing", "completed"), ok


async def test_a_forged_policy_command_is_refused_by_compliance(stack: Stack, kit: LedgerKit) -> None:
    """Compliance's topic is written by the gateway too: a cap set there without admin's
    signature is refused and no cap is stored; admin's own action still sets it."""
    topics = Topics("sluice")
    cap = SetTransferCap(command_id=new_id("cmd"), ctx=kit.ctx(), per_transfer="1000000", daily="1000000")
    r = await kit.rpc.call(topics.compliance_commands, cap, key=kit.tenant_id, timeout=20)
    refused(r, "unsigned")
    stored = "SELECT count(*) FROM compliance.caps WHERE tenant_id = $1"
    assert await kit.db.fetchval(stored, kit.tenant_id) == 0


async def test_a_forged_dead_letter_is_not_redriven(stack: Stack, tenant: Tenant) -> None:
    """A dead letter produced by hand, naming the events topic and a made-up
    ``transfer.updated``, was redriven on main, delivered signed and served by the events API.
    Now a letter is redriven only when the record at its origin is its payload, on a topic its
    service consumes; the forged ones are refused with their reasons and counted."""
    topics = Topics("sluice")
    event_id = new_id("evt")
    fake = TransferUpdated(
        event_id=event_id,
        tenant_id=tenant.tenant_id,
        mode="sandbox",
        created_at=datetime.now(UTC).isoformat(),
        data={"id": new_id("tr"), "state": "completed", "amount": "1000000.00"},
    )
    payload = msgspec.json.encode(fake)
    producer = AIOKafkaProducer(bootstrap_servers=stack.stores.kafka_bootstrap, enable_idempotence=False)
    await producer.start()
    try:
        real = await producer.send_and_wait(topics.ledger_reads, b'{"not": "a read"}')  # a real origin
        letters = {
            "origin_mismatch": ("webhooks", topics.events, real.partition, real.offset),
            "origin_missing": ("webhooks", topics.events, 0, 10**12),
            "wrong_topic": ("ledger", topics.events, 0, 0),
        }
        ids = {}
        for reason, (service, topic, partition, offset) in letters.items():
            if reason == "origin_mismatch":
                topic, service = topics.ledger_reads, "ledger"
            letter = DeadLetter(
                dead_letter_id=f"dlq_forged_{uuid.uuid4().hex}",
                service=service,
                topic=topic,
                partition=partition,
                offset=offset,
                error="RuntimeError('boom')",
                attempts=3,
                payload=payload,
                dead_lettered_at=datetime.now(UTC).isoformat(),
            )
            ids[letter.dead_letter_id] = reason
            await producer.send_and_wait(topics.dead_letters, msgspec.json.encode(letter))
    finally:
        await producer.stop()

    def kept() -> bool:
        r = stack.admin_call("list_dead_letters", limit=100)
        return set(ids) <= {i["dead_letter_id"] for i in r.json()["data"]["items"]}

    eventually(kept, timeout=60, what="admin keeping the forged letters")
    before = counter([stack.admin], "sluice_redrive_refused_total")
    r = stack.admin_call("redrive_dead_letters", dead_letter_ids=list(ids))
    assert r.status_code == 200, r.text
    data = r.json()["data"]
    assert data["redriven"] == []
    assert {x["dead_letter_id"]: x["reason"] for x in data["refused"]} == ids
    assert counter([stack.admin], "sluice_redrive_refused_total") - before == len(ids)
    # refused letters stay refused: a second redrive finds nothing to send
    again = stack.admin_call("redrive_dead_letters", dead_letter_ids=list(ids)).json()["data"]
    assert again == {"redriven": [], "refused": [], "remaining": False}
    # and the made-up event never reaches the partner's events
    await asyncio.sleep(0)  # nothing was published: no wait can make it appear
    got = tenant.get(f"/v1/events/{event_id}")
    assert got.status_code == 404, got.text


async def test_a_forged_allowance_release_is_refused(stack: Stack, kit: LedgerKit) -> None:
    """The gateway writes compliance's commands topic: a ``ReleaseAllowance`` there (on main
    it gave daily-cap allowance back for any transfer id) is refused; the ledger's releases
    travel on compliance.releases, which only the ledger writes."""
    forged = ReleaseAllowance(command_id=new_id("rel"), ctx=kit.ctx(), transfer_id=new_id("tr"))
    r = await kit.rpc.call(Topics("sluice").compliance_commands, forged, key=kit.tenant_id, timeout=20)
    refused(r, "unsigned")
    from common.acls import plan, writers

    assert writers(plan(), Topics().compliance_releases) == {"User:ledger", "User:admin"}

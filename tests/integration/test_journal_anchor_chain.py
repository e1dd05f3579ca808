"""The anchored journal, round 2 (docs/security.md, "Journal anchors") on the real stack: what round 1 let
through, read from its code.

- Two ledger instances: a rewrite past one instance's last anchor, once the other instance has
  anchored further, was anchored by the first (it only checked its own last anchor), and
  verify_journal, which compared the database with the newest anchor only, answered ok. Here the
  stack's two ledgers are the instance that anchored further; a third instance (``Anchors`` in
  this process, against the same database and broker) is the one whose last anchor is older.
- A deleted, recreated or truncated anchors topic: verify_journal answered ok (chains compared
  with nothing) or could not answer at all; now it is a finding, ``anchors_missing``.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.records_to_delete import RecordsToDelete
from aiokafka.errors import KafkaError
from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine

from common import kafka
from common.broker import create_missing
from common.contracts.base import Ctx
from common.contracts.commands import VerifyJournal
from common.errors import ServiceError
from common.settings import Settings
from common.topics import Topics
from ledger import verification
from ledger.anchors import Anchors
from ledger.config import LedgerConfig
from tests.conftest import Stack, make_tenant
from tests.support.admin import db, tampered
from tests.support.db import run_async
from tests.support.flows import book, created, funded, send
from tests.support.journal import (
    JOURNAL,
    _anchored,
    _entries,
    _rehashed,
    _tenant_with_chain,
    _verify,
)

pytestmark = pytest.mark.integration


@asynccontextmanager
async def _instance(settings: Settings, topic: str) -> AsyncIterator[Anchors]:
    """A ledger instance's anchors in this process: the stack's database and broker."""
    engine = create_async_engine(settings.database_url)
    producer = AIOKafkaProducer(**kafka.client_args(settings))
    await producer.start()

    async def publish(value: bytes, *, topic: str, key: bytes) -> None:
        await producer.send_and_wait(topic, value, key=key)

    try:
        yield Anchors(settings, async_sessionmaker(engine, expire_on_commit=False), topic, publish)
    finally:
        await producer.stop()
        await engine.dispose()


def _head(stack: Stack, tenant_id: str) -> dict[str, Any]:
    [head] = db(stack, "SELECT seq, head_hash FROM ledger.journal_chains WHERE tenant_id = $1", tenant_id)
    return head


def _settled(stack: Stack, tenant_id: str, above: int, wait_s: float = 20.0) -> dict[str, Any]:
    """The chain's head once it is past entry ``above`` and has not moved for 2 s."""
    deadline, last, since = time.monotonic() + wait_s, None, time.monotonic()
    while time.monotonic() < deadline:
        head = _head(stack, tenant_id)
        if head != last:
            last, since = head, time.monotonic()
        elif head["seq"] > above and time.monotonic() - since > 2:
            return head
        time.sleep(0.2)
    raise AssertionError(f"the chain of {tenant_id} did not settle past entry {above}: {last}")


def test_a_rewrite_past_one_instances_anchor_is_anchored_by_no_instance(stack: Stack) -> None:
    """Read from round 1: instance A anchored entry k; the stack's ledgers anchored entry n > k;
    entries k+1..n are rewritten (hashes recomputed, head moved) and the ledger appends on top.
    A saw only its own anchor (entry k, intact) and anchored the rewritten head: verify_journal
    compared the newest anchor (A's) and answered ok. Now A extends the newest anchor on the
    topic, whoever signed it, refuses, and verify_journal finds the rewrite."""
    settings = stack.settings()
    topic = Topics(settings.topic_prefix).journal_anchors
    t = make_tenant(stack, rate_limit=10000)
    src, dst = funded(t, "100.00")["wallet_id"], funded(t, "40.00")["wallet_id"]
    assert created(send(t, "/v1/transfers", book(src, dst, "1.00")))["state"]
    a, b = _anchored(stack, t.tenant_id)["seq"], None

    async def scenario() -> tuple[set[Any], dict[str, Any]]:
        nonlocal b
        async with _instance(settings, topic) as stale:
            await stale.publish_once()  # A's view: the chain at entry a (every chain, in fact)
            for n in range(2):
                await asyncio.to_thread(send, t, "/v1/transfers", book(src, dst, f"{n + 1}.50"))
            head = await asyncio.to_thread(_settled, stack, t.tenant_id, a)
            b = (await asyncio.to_thread(_anchored, stack, t.tenant_id))["seq"]  # by the stack's ledgers
            assert b == head["seq"] > a
            rewritten = (await asyncio.to_thread(_entries, stack, t.tenant_id))[a]  # entry a + 1
            async with _rewritten_then_extended(stack, t, rewritten, src, dst, b):
                await stale.publish_once()
                found = await asyncio.to_thread(_verify, stack, t.tenant_id)
            return set(stale.refused), found

    refused, found = run_async(scenario())
    assert (found["ok"], found.get("reason")) == (False, "anchor_mismatch"), found
    assert b is not None and a < found["anchor"]["seq"] <= b, found  # the first anchor past the rewrite
    assert (t.tenant_id, "sandbox") in refused  # the stale instance refused to anchor it
    assert _verify(stack, t.tenant_id)["ok"] is True, "put back: the chain and its anchors agree"


@asynccontextmanager
async def _rewritten_then_extended(
    stack: Stack, t: Any, entry: dict[str, Any], src: str, dst: str, anchored: int
) -> AsyncIterator[None]:
    """``entry`` rewritten (one posting doubled, every later hash and the head recomputed), then
    a transfer the ledger appends on top of the rewritten head; on the way out the posting is
    put back and every hash recomputed from the rewritten entry on, so the chain holds again."""
    legs = db(stack, "SELECT id, amount FROM ledger.postings WHERE entry_id = $1 ORDER BY id", entry["id"])
    undo = [("UPDATE ledger.postings SET amount = $2 WHERE id = $1", p["id"], p["amount"]) for p in legs]
    double = [("UPDATE ledger.postings SET amount = amount * 2 WHERE id = $1", p["id"]) for p in legs]
    try:
        with tampered(stack, double, [], triggers_off=JOURNAL):
            for sql, *args in _rehashed(stack, t.tenant_id, entry["seq"]):
                db(stack, sql, *args)
        assert created(await asyncio.to_thread(send, t, "/v1/transfers", book(src, dst, "0.75")))["state"]
        await asyncio.to_thread(_settled, stack, t.tenant_id, anchored)
        # The stack's ledgers extend their own anchor at entry `anchored`: they never anchor this.
        await asyncio.sleep(3 * float(stack.env["SLUICE_JOURNAL_ANCHOR_INTERVAL_S"]))
        yield
    finally:
        with tampered(stack, undo, [], triggers_off=JOURNAL):
            for sql, *args in _rehashed(stack, t.tenant_id, entry["seq"]):
                db(stack, sql, *args)


# ---- a missing, recreated or truncated anchors topic ----


async def _verify_with(settings: Settings, anchors: Anchors, tenant_id: str) -> dict[str, Any]:
    cmd = VerifyJournal(
        command_id="c-" + uuid.uuid4().hex,
        ctx=Ctx(request_id="r", tenant_id="", mode="sandbox"),
        target_tenant_id=tenant_id,
        mode="sandbox",
    )
    engine = create_async_engine(settings.database_url)
    try:
        async with async_sessionmaker(engine)() as session, session.begin():
            return dict(
                (
                    await verification.verify_journal(
                        session,
                        cmd,
                        LedgerConfig(
                            read_anchors=anchors.read, anchor_grace_s=3 * settings.journal_anchor_interval_s
                        ),
                    )
                ).data
            )
    finally:
        await engine.dispose()


async def _create(settings: Settings, topic: str) -> None:
    admin = AIOKafkaAdminClient(**kafka.client_args(settings))
    await admin.start()
    try:
        await create_missing(admin, settings, [topic], 1)
    finally:
        await admin.close()


async def _delete(settings: Settings, topic: str) -> None:
    admin = AIOKafkaAdminClient(**kafka.client_args(settings))
    await admin.start()
    try:
        await admin.delete_topics([topic])
        for _ in range(100):  # deletion is asynchronous on the broker
            if topic not in await admin.list_topics():
                return
            await asyncio.sleep(0.1)
    finally:
        await admin.close()


async def _truncate(settings: Settings, topic: str) -> None:
    """Its first record deleted (Kafka's DeleteRecords: the partition then starts at offset 1)."""
    admin = AIOKafkaAdminClient(**kafka.client_args(settings))
    await admin.start()
    try:
        await admin.delete_records({TopicPartition(topic, 0): RecordsToDelete(before_offset=1)})
    finally:
        await admin.close()


async def _answer_or_refusal(settings: Settings, anchors: Anchors, tenant_id: str) -> dict[str, Any]:
    try:
        return await _verify_with(settings, anchors, tenant_id)
    except ServiceError as exc:
        return {"ok": None, "refused": exc.details.get("reason")}
    except KafkaError as exc:  # pragma: no cover - shown in the assertion
        return {"ok": None, "refused": repr(exc)}


@pytest.mark.parametrize("how", ["deleted and recreated", "deleted", "truncated"])
def test_a_lost_anchors_topic_is_a_finding(stack: Stack, how: str) -> None:
    """Read from round 1: a recreated topic (as every ledger does at start) or one whose records
    were deleted answered ok, the chain compared with nothing; a deleted one could not answer at
    all (the reader raised). On a topic of its own (a fresh prefix), so the stack's anchors stay
    whole."""
    settings = stack.settings().model_copy(update={"topic_prefix": "t" + uuid.uuid4().hex[:12]})
    topic = Topics(settings.topic_prefix).journal_anchors
    t = _tenant_with_chain(stack, transfers=1)
    _anchored(stack, t.tenant_id)  # the chain is older than its anchoring interval by now

    async def scenario() -> tuple[dict[str, Any], dict[str, Any]]:
        await _create(settings, topic)
        async with _instance(settings, topic) as instance:
            await instance.publish_once()
            before = await _answer_or_refusal(settings, instance, t.tenant_id)
            if how == "truncated":
                await _truncate(settings, topic)
            else:
                await _delete(settings, topic)
                if how == "deleted and recreated":
                    await _create(settings, topic)
            await asyncio.sleep(3 * settings.journal_anchor_interval_s)  # the chain past its grace
            async with _instance(settings, topic) as reader:  # verify_journal on another instance
                after = await _answer_or_refusal(settings, reader, t.tenant_id)
        await _delete(settings, topic)
        return before, after

    before, after = run_async(scenario())
    assert (before["ok"], before["anchored"]) == (True, 1), before
    assert (after["ok"], after.get("reason")) == (False, "anchors_missing"), after

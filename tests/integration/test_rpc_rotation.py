"""Reply topics rotate (common.rpc): after ``kafka_reply_rotate_records`` replies a client moves
new commands to a fresh reply topic, still answers commands that named the old one, and deletes
the old topic once every command that named it has had its deadline."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from aiokafka.admin import AIOKafkaAdminClient
from faststream.kafka import KafkaBroker

from common.broker import create_broker
from common.contracts import Result
from common.rpc import RpcClient, reply
from common.settings import Settings
from tests.conftest import Stack

pytestmark = pytest.mark.integration


async def _topics(bootstrap: str, prefix: str) -> set[str]:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        return {t for t in await admin.list_topics() if t.startswith(prefix)}
    finally:
        await admin.close()


async def _answer(client: RpcClient, broker: KafkaBroker, reply_to: str, n: int) -> list[Result]:
    """Register ``n`` waiters, publish their results to ``reply_to``, return what they got."""
    loop = asyncio.get_running_loop()
    futs = []
    for _ in range(n):
        cid = "cmd_" + uuid.uuid4().hex
        fut: asyncio.Future[Result] = loop.create_future()
        client._waiters[cid] = [fut]  # what call() registers before it publishes
        futs.append(fut)
        await reply(broker, reply_to, Result(command_id=cid, request_id="req_" + cid, status=200))
    return list(await asyncio.wait_for(asyncio.gather(*futs), 20))


async def test_reply_topics_rotate_answer_late_replies_and_are_deleted(stack: Stack) -> None:
    settings = Settings(
        kafka_bootstrap=stack.stores.kafka_bootstrap,
        instance_id=f"rotation-{uuid.uuid4().hex[:8]}",
        kafka_reply_rotate_records=5,
        gateway_timeout_s=1.0,
    )
    broker = create_broker(settings, "rotation-test")
    await broker.start()
    client = RpcClient(broker, settings, "rotation-test")
    await client.start()
    try:
        first = client.reply_topic
        assert (await _answer(client, broker, first, 5))[0].status == 200
        for _ in range(200):  # the reader rotates after the fetch that reached 5 replies
            if client.reply_topic != first:
                break
            await asyncio.sleep(0.05)
        second = client.reply_topic
        assert second != first, "no rotation after 5 replies"
        # a command that named the old topic is still answered while it retires
        assert len(await _answer(client, broker, first, 2)) == 2
        assert len(await _answer(client, broker, second, 3)) == 3
        # after the deadline (gateway timeout + 10 s margin) the old topic is deleted
        for _ in range(60):
            if first not in await _topics(settings.kafka_bootstrap, client.reply_base):
                break
            await asyncio.sleep(0.5)
        topics = await _topics(settings.kafka_bootstrap, client.reply_base)
        assert first not in topics and second in topics, topics
    finally:
        await client.stop()
        await broker.stop()

"""A ledger killed between commit and publish loses nothing: its outbox rows (the events) are
published by the relay of the surviving instances, and the unacknowledged command, redelivered
to a healthy instance, changes nothing and is answered from the inbox: the reply has no row of
its own (common.outbox)."""

from __future__ import annotations

import asyncio
import signal
import uuid

import pytest

from common.contracts import Result, decode, encode
from tests.conftest import Stack
from tests.support.ledger import open_kit
from tools.stack.processes import free_port

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]  # the first test may start the stack


async def test_ledger_killed_between_commit_and_publish_loses_nothing(stack: Stack) -> None:
    """A ledger on its own topic prefix SIGKILLs itself after commit, before dispatch."""
    prefix = f"crash{uuid.uuid4().hex[:8]}"
    extra = {"SLUICE_TOPIC_PREFIX": prefix, "SLUICE_FAILPOINTS": "ledger.after_commit=kill"}
    crasher = stack.suite.start("ledger", free_port(), extra, instance=f"ledger-crash-{prefix}")
    survivor = None
    try:
        await asyncio.to_thread(stack.suite.wait_ready, [crasher], 120)
        async with open_kit(stack, prefix) as kit:
            cus = kit.customer_cmd(email="c@example.com", service_user_id="u-c", full_name="Crash Test")
            sending = asyncio.create_task(kit.send(cus, wait_s=180))
            assert await asyncio.to_thread(crasher.popen.wait, 60) == -signal.SIGKILL
            assert (
                await kit.db.fetchval("SELECT count(*) FROM ledger.customers WHERE id = $1", cus.customer_id)
                == 1
            )
            # The unacknowledged command is redelivered to a healthy instance, which answers the
            # waiting caller from the inbox: committed once, no twin.
            survivor = stack.suite.start(
                "ledger", free_port(), {"SLUICE_TOPIC_PREFIX": prefix}, instance=f"ledger-survivor-{prefix}"
            )
            await asyncio.to_thread(stack.suite.wait_ready, [survivor], 120)
            r = await sending
            assert r.status == 201 and r.data["customer_id"] == cus.customer_id
            again = await kit.send(cus, wait_s=60)
            assert encode(again) == encode(r)
            assert (
                await kit.db.fetchval("SELECT count(*) FROM ledger.customers WHERE id = $1", cus.customer_id)
                == 1
            )
            assert decode(encode(again), Result).data["customer_id"] == cus.customer_id
    finally:
        for proc in (crasher, survivor):
            if proc is not None:
                stack.suite.stop_proc(proc)

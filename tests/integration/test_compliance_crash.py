"""A compliance process killed between commit and publish loses nothing. A decision's outcome
has no outbox row (common.outbox, ``recreated``): the command stays unacknowledged, and the
instance that reads it next finds the decision and publishes the same outcome, decided once.
And a publish the broker refuses after commit is written as a row, for the relay."""

from __future__ import annotations

import asyncio
import signal
import uuid

import pytest

from tests.conftest import Stack
from tests.support.compliance import Probe, private_compliance, start_private_compliance
from tests.support.db import pg_connect

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]


async def test_compliance_killed_between_commit_and_publish_forwards_its_decision_once(stack: Stack) -> None:
    """The first instance SIGKILLs itself at its first publish (failpoint
    ``outbox.compliance.publish=kill``), after its decision committed. No outbox row is left;
    a second instance reads the command again and forwards it, with the decision stored."""
    prefix = "ccr" + uuid.uuid4().hex[:6]
    [crasher] = start_private_compliance(
        stack, prefix, extra={"SLUICE_FAILPOINTS": "outbox.compliance.publish=kill"}
    )
    db = await pg_connect(stack.stores.database_url)
    try:
        async with Probe(stack.stores.kafka_bootstrap, prefix, stack.stores.database_url) as probe:
            tenant = await probe.tenant()
            cmd = probe.customer_cmd(tenant)
            seen = await probe.publish(cmd)
            assert await asyncio.to_thread(crasher.popen.wait, 60) == -signal.SIGKILL
            decided = "SELECT id FROM compliance.decisions WHERE command_id = $1"
            [decision] = await db.fetch(decided, cmd.command_id)  # committed before the kill
            left = "SELECT count(*) FROM compliance.outbox WHERE topic LIKE $1"
            assert await db.fetchval(left, prefix + ".%") == 0  # nothing for a relay: no row
            with private_compliance(stack, prefix):
                forwarded = (await asyncio.wait_for(seen, 120)).forwarded
            assert forwarded.command_id == cmd.command_id
            assert forwarded.decision.decision_id == decision["id"]
            assert [r["id"] for r in await db.fetch(decided, cmd.command_id)] == [decision["id"]]
    finally:
        stack.suite.stop_proc(crasher)
        await db.close()


async def test_a_refused_publish_is_written_for_the_relay(stack: Stack) -> None:
    """The broker refuses the first two publishes after commit (failpoint ``error``): the
    batch returns, the outcome is written to ``compliance.outbox`` with its bytes, and the
    relay forwards it. Without that fallback nothing would ever forward the command."""
    prefix = "ccr" + uuid.uuid4().hex[:6]
    extra = {"SLUICE_FAILPOINTS": "outbox.compliance.publish=2*error"}
    with private_compliance(stack, prefix, extra=extra):
        async with Probe(stack.stores.kafka_bootstrap, prefix, stack.stores.database_url) as probe:
            tenant = await probe.tenant()
            cmd = probe.customer_cmd(tenant)
            forwarded = (await asyncio.wait_for(await probe.publish(cmd), 60)).forwarded
            assert forwarded.command_id == cmd.command_id

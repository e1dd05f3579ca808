"""The shared inbox and bulk statements run inside the caller's transaction, on real PostgreSQL."""

from __future__ import annotations

import pytest

from common.db import create_engine, driver, sessionmaker
from common.ids import new_id
from common.inbox import Inbox
from tests.conftest import Stack

pytestmark = pytest.mark.inprocess


class Boom(Exception):
    pass


async def test_a_bulk_claim_sent_first_rolls_back_with_its_transaction(stack: Stack) -> None:
    """Regression: SQLAlchemy begins lazily, so a raw statement sent first used to autocommit,
    and a command whose batch failed was then seen as already processed (and never answered)."""
    engine = create_engine(stack.stores.database_url, 2)
    sessions = sessionmaker(engine)
    inbox = Inbox("ledger")
    cid = new_id("cmd")
    try:
        with pytest.raises(Boom):
            async with sessions() as s, s.begin():
                fresh, _ = await inbox.claim_many(s, [cid])
                assert fresh == {cid}
                raise Boom
        async with sessions() as s, s.begin():
            fresh, previous = await inbox.claim_many(s, [cid])
            assert fresh == {cid} and previous == {}
            await inbox.record_many(s, {cid: b"result"})
        async with sessions() as s, s.begin():
            fresh, previous = await inbox.claim_many(s, [cid, new_id("cmd")])
            assert cid not in fresh and len(fresh) == 1
            assert previous == {cid: b"result"}
            txid = await (await driver(s)).fetchval("SELECT txid_current_if_assigned()")
            assert txid is not None  # the claim ran inside this transaction
    finally:
        await engine.dispose()

"""common.db.timeout_is_a_lost_host: a statement that ran out of its command timeout is a lost
host to SQLAlchemy (the connection dropped without a ROLLBACK, the pool invalidated); any other
error is left as SQLAlchemy judged it. The behaviour on a hung primary is
tests/integration/test_db_multihost.py::test_one_statement_timing_out_on_a_hung_primary_retires_the_whole_pool."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from sqlalchemy import event

from common.db import create_engine, timeout_is_a_lost_host

pytestmark = pytest.mark.unit


def test_a_command_timeout_is_a_disconnect() -> None:
    # asyncpg raises asyncio.TimeoutError: the builtin TimeoutError since Python 3.11
    ctx = SimpleNamespace(
        original_exception=TimeoutError(), is_disconnect=False, invalidate_pool_on_disconnect=False
    )
    timeout_is_a_lost_host(ctx)  # type: ignore[arg-type]
    assert ctx.is_disconnect is True
    assert ctx.invalidate_pool_on_disconnect is True  # the whole pool, not this connection only


@pytest.mark.parametrize("error", [ValueError("bad"), ConnectionRefusedError(), OSError("reset")])
def test_other_errors_keep_sqlalchemys_judgement(error: BaseException) -> None:
    for judged in (False, True):
        ctx = SimpleNamespace(original_exception=error, is_disconnect=judged)
        timeout_is_a_lost_host(ctx)  # type: ignore[arg-type]
        assert ctx.is_disconnect is judged


def test_every_engine_the_services_build_listens() -> None:
    for url in (
        "postgresql+asyncpg://u@127.0.0.1:5432/db",
        "postgresql+asyncpg://u@/db?host=127.0.0.1:5432&host=127.0.0.1:5433&target_session_attrs=read-write",
    ):
        engine = create_engine(url, 2)
        assert event.contains(engine.sync_engine, "handle_error", timeout_is_a_lost_host)

"""The consumer runtime counts a batch that failed and ran one by one
(``sluice_batch_splits_total``): the ledger load test asserts that counter did not move, so it
must move when a split happens, and only then."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest
from prometheus_client import REGISTRY

from common.consume import BatchProcessor, Failure
from tests.simulation.net import Msg

pytestmark = pytest.mark.unit


def _splits(name: str) -> float:
    return REGISTRY.get_sample_value("sluice_batch_splits_total", {"consumer": name}) or 0.0


def _run(name: str, fail_batches: bool) -> tuple[list[bytes], int]:
    done: list[bytes] = []

    async def batch(msgs: Sequence[bytes]) -> None:
        if fail_batches and len(msgs) > 1:
            raise ValueError("a deterministic failure of the batch")
        done.extend(msgs)

    async def dead(f: Failure) -> None:
        raise AssertionError(f"nothing should be dead-lettered: {f}")

    proc = BatchProcessor(name=name, decode=lambda raw: raw, handle_batch=batch, dead_letter=dead)
    records = [Msg("t", 0, i, None, f"m{i}".encode()) for i in range(3)]
    asyncio.run(proc(records))
    return done, proc.splits


def test_a_failing_batch_is_counted_as_a_split() -> None:
    before = _splits("split-test")
    done, splits = _run("split-test", fail_batches=True)
    assert done == [b"m0", b"m1", b"m2"]  # each message alone, all done
    assert splits == 1 and _splits("split-test") == before + 1


def test_a_good_batch_is_not_a_split() -> None:
    before = _splits("nosplit-test")
    done, splits = _run("nosplit-test", fail_batches=False)
    assert done == [b"m0", b"m1", b"m2"] and splits == 0 and _splits("nosplit-test") == before

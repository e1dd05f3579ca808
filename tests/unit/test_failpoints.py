"""The failpoint mechanism's spec and actions, including the seeded share (``P%``) and
``crash`` that the deterministic simulation uses."""

from __future__ import annotations

import pytest

from common import failpoints
from common.failpoints import FailpointCrash, FailpointError, FailpointUnavailable


@pytest.fixture(autouse=True)
def _reset() -> object:
    yield
    failpoints.configure("")


def fired(name: str, hits: int) -> list[int]:
    out = []
    for i in range(hits):
        try:
            failpoints.hit(name)
        except FailpointError:
            out.append(i)
    return out


def test_a_share_fires_on_about_that_share_of_hits_and_repeats_with_its_seed() -> None:
    failpoints.configure("p=25%error")
    failpoints.seed(7)
    first = fired("p", 2000)
    assert 400 < len(first) < 600
    failpoints.seed(7)
    assert fired("p", 2000) == first
    failpoints.seed(8)
    assert fired("p", 2000) != first


def test_a_count_fires_the_first_hits_only() -> None:
    failpoints.configure("p=2*error")
    assert fired("p", 5) == [0, 1]


def test_crash_is_not_an_exception_a_handler_catches() -> None:
    failpoints.configure("c=crash;u=unavailable")
    with pytest.raises(FailpointCrash):
        try:
            failpoints.hit("c")
        except Exception:  # noqa: BLE001 - what a handler would write
            pytest.fail("a crash must not be caught as an error")
    with pytest.raises(FailpointUnavailable):
        failpoints.hit("u")
    failpoints.hit("other")  # not named: inert


@pytest.mark.parametrize("spec", ["p=", "p=5%%error", "p=1.5.5%crash", "p=explode", "=error"])
def test_a_malformed_spec_is_refused(spec: str) -> None:
    with pytest.raises(ValueError, match="SLUICE_FAILPOINTS"):
        failpoints.parse(spec)

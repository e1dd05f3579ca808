"""Events and journal entries are stamped in UTC whatever the process's time zone.
``now_iso`` must read an aware UTC clock: a naive ``datetime.now()`` is local time, and ``iso``
takes a naive time as UTC, so every event would be off by the zone's offset on a machine whose
``TZ`` is not UTC (mutmut's ``datetime.now(None)`` survived because every test ran in UTC)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from common.contracts.base import Ctx
from common.contracts.events import CustomerCreated
from ledger.core import chain
from ledger.core.effects import Effects, now_iso

pytestmark = pytest.mark.unit

# POSIX zone strings (no tz database needed): the offset is west of UTC, so "-5:30" is UTC+5:30
ZONES = ["XST-5:30", "YST+7", "UTC0"]


@pytest.fixture(params=ZONES)
def zone(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("TZ", request.param)
    time.tzset()
    yield request.param
    monkeypatch.undo()
    time.tzset()


def seconds_off(stamp: str) -> float:
    """How far a ``...Z`` stamp is from the true time (time.time() is zone-free)."""
    return abs(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() - time.time())


def test_now_iso_is_utc_in_any_zone(zone: str) -> None:
    assert (time.localtime().tm_gmtoff != 0) == (zone != "UTC0")  # the zone took effect
    stamp = now_iso()
    assert stamp.endswith("Z") and seconds_off(stamp) < 60, (zone, stamp)


def test_an_event_is_stamped_in_utc_in_any_zone(zone: str) -> None:
    effects = Effects(201, {})
    effects.emit(CustomerCreated, Ctx(request_id="r", tenant_id="t", mode="sandbox"), data={})
    assert seconds_off(effects.events[0].created_at) < 60, zone


def test_the_journal_chain_stamps_in_utc_in_any_zone(zone: str) -> None:
    """An entry's hash covers its time in UTC: a chain written on a machine in one zone must
    verify on another (``astimezone(None)`` would convert to the local zone)."""
    stamp = datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC)
    text = chain.canonical("je_1", "ten", "sandbox", "deposit", None, "dep_1", stamp, [])
    assert text.split("|")[7] == "2026-01-02T03:04:05.000006Z", zone

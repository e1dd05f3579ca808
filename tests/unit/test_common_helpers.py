"""The helpers every service shares (libs/common): time format, cursor pages, bank checksums,
command results."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from types import SimpleNamespace

import pytest

from common.checksums import aba_check_digit, aba_valid, iban, iban_valid
from common.contracts.base import Ctx
from common.contracts.commands import GetPolicyStatus
from common.errors import ErrorCode, ServiceError
from common.paging import page
from common.results import error_result, ok_result
from common.times import iso, iso_from_epoch

pytestmark = pytest.mark.unit


def test_iso_is_utc_with_z() -> None:
    assert iso(datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)) == "2026-01-02T03:04:05Z"
    plus2 = timezone(timedelta(hours=2))
    assert iso(datetime(2026, 1, 2, 5, 4, 5, 120000, tzinfo=plus2)) == "2026-01-02T03:04:05.120000Z"
    assert iso(datetime(2026, 1, 2, 3, 4, 5)) == "2026-01-02T03:04:05Z"  # naive: taken as UTC
    assert iso(None) is None
    assert iso_from_epoch(0) == "1970-01-01T00:00:00Z"


def rows(n: int) -> list[SimpleNamespace]:
    return [SimpleNamespace(id=i, name=f"r{i}") for i in range(n)]


def test_page_shows_limit_and_points_past_the_last_shown_row() -> None:
    got = page(rows(4), 3, lambda r: {"name": r.name})
    assert got == {"items": [{"name": "r0"}, {"name": "r1"}, {"name": "r2"}], "next_cursor": "2"}
    assert page(rows(3), 3, vars)["next_cursor"] is None
    assert page([], 3, vars) == {"items": [], "next_cursor": None}
    assert page(rows(2), 1, vars, cursor=lambda r: r.name)["next_cursor"] == "r0"


def test_aba_published_numbers_and_typos() -> None:
    for good in ("021000021", "011000015", "026009593", "121000358"):
        assert aba_valid(good), good
    for bad in ("021000022", "12345678", "0210000210", "02100002a", "０２１０００２１"):
        assert not aba_valid(bad), bad
    assert aba_check_digit("02100002") == "1"


def test_iban_published_numbers_and_typos() -> None:
    for good in ("GB82WEST12345698765432", "DE89370400440532013000", "FR1420041010050500013M02606"):
        assert iban_valid(good), good
    assert iban_valid("gb82 west 1234 5698 7654 32")
    for bad in ("GB82WEST12345698765433", "GB28WEST12345698765432", "XX00", "GB82WEST1234569876543!"):
        assert not iban_valid(bad), bad
    made = iban("DE", "370400440532013000")
    assert made == "DE89370400440532013000" and iban_valid(made)


def test_results_one_shape() -> None:
    ctx = Ctx(tenant_id="t", mode="sandbox", request_id="req_1")
    cmd = GetPolicyStatus(command_id="cmd_1", ctx=ctx)
    ok = ok_result(cmd, {"a": 1}, 201)
    assert (ok.command_id, ok.request_id, ok.status, ok.data, ok.error) == (
        "cmd_1",
        "req_1",
        201,
        {"a": 1},
        None,
    )
    err = error_result(cmd, ServiceError(ErrorCode.NOT_FOUND, "gone", details={"reason": "x"}))
    assert err.status == 404 and err.error is not None
    assert (err.error.code, err.error.message, err.error.details) == ("not_found", "gone", {"reason": "x"})

"""Bench honesty (docs/performance/index.md, yardsticks 3 and 9), on synthetic records and against a
scripted local server: only a 503 overloaded is shed (any other 5xx is admitted work that
failed), the same targets at 2x and 4x, 503s are not recovered, keys without a 2xx are
undecided, requests with no answer are counted with their cause, requests still running at the
end are counted, quiet-tenant refusals are in the line, and a missed target is named after
MISSED: (which fails make bench)."""

from __future__ import annotations

import asyncio
import math
from collections import Counter
from typing import Any

import pytest

from tools.bench.driver import Pool, cause, drive
from tools.bench.overload.part import _door_line
from tools.bench.overload.plan import shares
from tools.bench.overload.report import (
    Audit,
    Phases,
    Summary,
    generator_line,
    limit_down_s,
    line,
    missed,
    recovered_after,
    summarize,
)

pytestmark = pytest.mark.unit

PHASES = Phases(overload_start=10.0, overload_s=10.0, after_s=5.0, capacity=10.0, factor=2.0)


def rec(
    phase: str, at: float, status: int = 201, s: float = 0.05, tenant: int = 2, **kw: Any
) -> dict[str, Any]:
    return {"phase": phase, "at": at, "status": status, "s": s, "tenant": tenant, "key": f"k{at}", **kw}


def healthy() -> list[dict[str, Any]]:
    """Quiet phase, 2x overload (half shed, fast), a clean recovery: every target met."""
    reqs = [rec("quiet", i / 10) for i in range(100)]
    for i in range(200):
        at = 10.0 + i / 20
        tenant = 1 if i % 10 == 0 else 0
        shed = tenant == 0 and i % 2
        if shed:
            reqs.append(rec("overload", at, 503, 0.005, tenant=tenant, reason="overloaded"))
        else:
            reqs.append(rec("overload", at, 201, 0.2, tenant=tenant))
    reqs += [rec("after", 20.0 + i / 10) for i in range(50)]
    return reqs


def summary(reqs: list[dict[str, Any]], audit: Audit | None = None, factor: float = 2.0) -> Summary:
    s = summarize(reqs, PHASES, audit or Audit())
    s.missed = missed(s, factor)
    return s


def test_a_healthy_run_meets_every_target() -> None:
    s = summary(healthy())
    assert s.missed == [], s
    assert (s.offered, s.shed, s.quiet_refused, s.recovered_s, s.running) == (20.0, 10.0, 0, 0.0, 0)
    assert s.goodput == pytest.approx(1.0)
    text = line(s)
    assert text.startswith(
        "bench-overload: offered 20/s admitted 10/s (2xx 10/s) shed 10/s failed 0 admitted p99 200 ms"
    )
    assert "quiet-tenant refused 0" in text and "no-answer 0 still-running 0" in text
    assert text.endswith("undecided 0 (done 0) duplicated 0; targets met")


def test_503s_in_the_recovery_are_not_recovered() -> None:
    reqs = healthy()
    for r in reqs:  # one 503 in each of the first three seconds, fast 2xx around them
        if r["phase"] == "after" and r["at"] in (20.0, 21.0, 22.0):
            r["status"], r["s"] = 503, 0.001
    s = summary(reqs)
    assert s.recovered_s == 3.0
    assert "recovered_s <= 5" not in s.missed
    everything_shed = [
        dict(r, status=503, reason="overloaded") if r["phase"] == "after" else r for r in healthy()
    ]
    s = summary(everything_shed)
    assert math.isinf(s.recovered_s) and "recovered_s <= 5" in s.missed
    assert "recovered_s never" in line(s)


def test_recovery_counts_only_once_it_holds() -> None:
    after = [rec("after", 20.0 + i / 10, s=0.05) for i in range(50)]
    for r in after:
        if 22.0 <= r["at"] < 23.0:
            r["s"] = 3.0  # a relapse in the third second
    assert recovered_after(after, 20.0, 5.0, 50.0) == 3.0
    assert recovered_after([], 20.0, 5.0, 50.0) == math.inf  # no answers at all: never


def test_no_answer_and_still_running_are_counted_with_their_cause() -> None:
    reqs = healthy()
    reqs[150].update(status=0, cause="client timeout")
    reqs[151].update(status=0, cause="reset")
    reqs[152].update(status=0, cause="reset")
    reqs[153].update(status=-1, cause="still running at the end", s=40.0)
    s = summary(reqs)
    assert s.no_answer == Counter({"reset": 2, "client timeout": 1}) and s.running == 1
    assert {"no answer 0", "still running 0"} <= set(s.missed)
    assert "no-answer 3 (client timeout 1, reset 2) still-running 1" in line(s)


def test_quiet_tenant_refusals_are_in_the_line_and_miss_the_target() -> None:
    reqs = healthy()
    quiet = [r for r in reqs if r["phase"] == "overload" and r["tenant"] == 1]
    quiet[0].update(status=503, reason="overloaded")
    s = summary(reqs)
    assert s.quiet_refused == 1 and "quiet-tenant refused 0" in s.missed
    assert "quiet-tenant refused 1" in line(s) and "MISSED: quiet-tenant refused 0" in line(s)


def test_undecided_lost_and_duplicated_keys_always_miss() -> None:
    for factor in (2.0, 4.0):
        s = summary(healthy(), Audit(lost=1, duplicated=2, undecided=3, undecided_done=1), factor)
        assert {"lost 0", "duplicated 0", "undecided 0"} <= set(s.missed)
        assert "lost 1 undecided 3 (done 1) duplicated 2" in line(s)


def test_at_four_times_only_recovery_and_quiet_latency_are_not_targets() -> None:
    reqs = healthy()
    for r in reqs:
        if r["phase"] == "after":
            r.update(status=503, reason="overloaded")  # never recovered
    quiet = [r for r in reqs if r["phase"] == "overload" and r["tenant"] == 1]
    quiet[0]["s"] = 0.4  # within the admitted p99 target, over nothing at 4x
    assert summary(reqs, factor=4.0).missed == []
    assert "recovered_s <= 5" in summary(reqs).missed


def test_the_same_targets_at_two_and_four_times() -> None:
    """Yardstick 9: at 2x and 4x alike admitted p99 <= 500 ms, shed p99 <= 20 ms, goodput
    >= 0.9, no answer and still running 0 (today's harness let 4x miss all four)."""
    reqs = healthy()
    reqs[150].update(status=0, cause="reset")
    for factor in (2.0, 4.0):
        assert "no answer 0" in summary(reqs, factor=factor).missed
    slow = [dict(r, s=0.7) if r["status"] == 201 and r["phase"] == "overload" else r for r in healthy()]
    slow_shed = [dict(r, s=0.5) if r["status"] == 503 else r for r in healthy()]
    starved = [
        dict(r, status=503, reason="overloaded", s=0.005)
        if r["phase"] == "overload" and r["at"] >= 18.0 and r["tenant"] != 1
        else r
        for r in healthy()
    ]
    for factor in (2.0, 4.0):
        assert summary(slow, factor=factor).missed == ["admitted p99 <= 500 ms"]
        assert summary(slow_shed, factor=factor).missed == ["shed p99 <= 20 ms"]
        assert summary(starved, factor=factor).missed == ["goodput >= 0.9"]


def test_only_a_503_overloaded_is_shed() -> None:
    """A 503 upstream_timeout, store_unavailable, in_flight or with no reason is admitted work
    that failed: in the admitted p99 at its time, never goodput, never shed (today's harness
    counted every 503 as shed)."""
    reqs = healthy()
    admitted = [r for r in reqs if r["phase"] == "overload" and r["status"] == 201]
    for r, why in zip(
        admitted[:12], ["upstream_timeout", "store_unavailable", "in_flight", None] * 3, strict=True
    ):
        r.update(status=503, reason=why, s=2.0)
    s = summary(reqs)
    assert s.shed == 10.0  # the door's refusals only
    assert s.admitted == 10.0 and s.done == pytest.approx(8.8)
    assert s.admitted_p99 == 2000.0 and s.goodput == pytest.approx(0.88)
    assert s.failed == Counter(
        {"503 upstream_timeout": 3, "503 store_unavailable": 3, "503 in_flight": 3, "503 (no reason)": 3}
    )
    assert {"admitted p99 <= 500 ms", "goodput >= 0.9"} <= set(s.missed)
    assert (
        "failed 12 (503 (no reason) 3, 503 in_flight 3, 503 store_unavailable 3, 503 upstream_timeout 3)"
        in line(s)
    )


def test_a_request_with_no_answer_counts_in_the_admitted_p99_at_its_wait() -> None:
    reqs = healthy()
    first = next(r for r in reqs if r["phase"] == "overload" and r["status"] == 201)
    for r in [r for r in reqs if r["phase"] == "overload" and r["status"] == 201][:3]:
        r.update(status=0, cause="client timeout", s=30.0)
    assert first["status"] == 0
    s = summary(reqs)
    assert s.admitted_p99 == 30000.0 and "admitted p99 <= 500 ms" in s.missed


def test_causes_name_what_happened() -> None:
    assert cause(TimeoutError()) == "client timeout"
    assert cause(ConnectionRefusedError(111, "refused")) == "connection refused"
    assert cause(ConnectionResetError(104, "reset")) == "reset"
    assert cause(asyncio.IncompleteReadError(b"", 10)) == "reset"
    assert cause(OSError(24, "too many")) == "os error EMFILE"
    assert cause(ValueError("bad status")) == "bad answer ValueError"


def test_the_generator_line_shows_its_own_lag() -> None:
    gen = {
        "connections": 300,
        "waited_for_connection": 0,
        "schedule_lag_p99_ms": 1.25,
        "schedule_lag_max_ms": 4.0,
        "send_lag_p99_ms": 2.0,
        "send_lag_max_ms": 9.5,
    }
    assert generator_line(gen) == (
        "overload generator: 300 connections opened, 0 requests waited for one; schedule lag p99 "
        "1.2 ms max 4.0 ms; send lag p99 2.0 ms max 9.5 ms"
    )


async def test_the_pool_opens_connections_as_needed_then_waits() -> None:
    pool = Pool("127.0.0.1", 9, limit=2)
    a, b = await pool.get(), await pool.get()
    assert a is not b and pool.opened == 2
    waiter = asyncio.create_task(pool.get())
    await asyncio.sleep(0)
    assert not waiter.done() and pool.waited == 1
    await pool.put(a)
    assert await waiter is a


async def _server(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Answers by the bearer key: ok 201, shed 503, close (no answer), hang (never answers)."""
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
            await reader.readexactly(length)
            key = head.split(b"Authorization: Bearer ")[1].split(b"\r\n")[0]
            if key == b"close":
                writer.close()
                return
            if key == b"hang":
                await asyncio.sleep(3600)
            if key == b"ok":
                writer.write(b"HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\n{}")
                continue
            why = b"overloaded" if key == b"shed" else b"upstream_timeout"
            body = (
                b'{"success":false,"error":{"code":"provider_unavailable","details":{"reason":"'
                + why
                + b'"}}}'
            )
            writer.write(
                b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
            )
    except (asyncio.IncompleteReadError, ConnectionError):
        writer.close()


async def test_the_driver_accounts_for_every_offered_request() -> None:
    server = await asyncio.start_server(_server, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    keys = ("ok", "shed", "slow", "close", "hang")
    tenants = [{"key": k, "wallets": ["w1", "w2"], "share": 1.0} for k in keys]
    plan = {
        "url": f"http://127.0.0.1:{port}/v1/transfers",
        "tenants": tenants,
        "capacity": 40.0,
        "factor": 2.0,
        "overload_s": 0.5,
        "quiet_s": 0.25,
        "client_timeout_s": 5.0,
        "drain_s": 0.5,  # the hung requests outlive it: still running
    }
    try:
        res = await drive(plan)
    finally:
        server.close()
    reqs = res["requests"]
    assert len(reqs) == 5 + 40 + 5  # every offered request has a record
    by_tenant: dict[str, set[tuple[int, str | None, str | None]]] = {}
    for r in reqs:
        by_tenant.setdefault(tenants[r["tenant"]]["key"], set()).add(
            (r["status"], r.get("cause"), r.get("reason"))
        )
    assert by_tenant.get("ok", {(201, None, None)}) == {(201, None, None)}
    assert by_tenant.get("shed", {(503, None, "overloaded")}) == {(503, None, "overloaded")}
    assert by_tenant.get("slow", {(503, None, "upstream_timeout")}) == {(503, None, "upstream_timeout")}
    assert by_tenant["close"] == {(0, "reset", None)}
    assert by_tenant["hang"] == {(-1, "still running at the end", None)}
    assert all(r["s"] is not None and r["s"] >= 0 for r in reqs)
    assert res["generator"]["connections"] >= 2


def test_the_door_line_shows_the_limit_and_the_refusals_of_this_run() -> None:
    before = {'limit{scope="instance"}': 20.0, 'shed_total{reason="instance"}': 5.0}
    after = {
        'limit{scope="instance"}': 41.0,
        'shed_total{reason="instance"}': 125.0,
        'shed_total{reason="queue"}': 3.0,
    }
    assert _door_line(before, after) == (
        "command limit 20 before, 41 after the load; shed by bound instance 120, queue 3"
    )
    assert _door_line({}, {}) == "command limit nan before, nan after the load; shed by bound none"


def test_beside_the_hog_the_limit_must_come_down_a_quarter_within_5_s() -> None:
    """Yardstick 7: on today's harness the hog run had the overload targets of any 2x run,
    and whether the door's limit came down beside the hog was printed, not judged."""
    samples = [(t / 4, 40.0) for t in range(40)] + [(10.0 + t / 4, 40.0 - 2 * t) for t in range(12)]
    assert limit_down_s(samples, hog_start=10.0) == pytest.approx(1.25)  # 30 <= 0.75 * 40
    assert limit_down_s([(t / 4, 40.0) for t in range(80)], hog_start=10.0) == math.inf
    assert limit_down_s([(11.0, 10.0)], hog_start=10.0) == math.inf  # no limit known at the start
    s = summary(healthy())
    s.limit_down_s = 7.0
    assert missed(s, 2.0, hog=True) == ["limit down 25% within 5 s of the hog"]
    s.limit_down_s, s.admitted_p99 = 4.0, 900.0
    assert missed(s, 2.0, hog=True) == []  # within 1 s beside the hog
    s.admitted_p99 = 1100.0
    assert missed(s, 2.0, hog=True) == ["admitted p99 <= 1000 ms"]
    assert "limit down a quarter after the hog 4.0 s" in line(s)


def test_the_tenant_at_its_fair_share_may_lose_at_most_1_percent() -> None:
    """Yardstick 8: the quiet tenant is watched at 2 % of the load (0 refused) and a tenant
    at exactly its fair share of the capacity, a sixth (at most 1 % refused); on today's harness
    only the 2 % tenant was watched."""
    reqs = healthy()
    fair = [rec("overload", 10.0 + i / 200, 201, 0.1, tenant=2) for i in range(200)]
    for r in fair[:2]:
        r.update(status=503, reason="overloaded", s=0.005)
    s = summary(reqs + fair)
    assert (s.fair_refused, s.fair_sent) == (2, 200) and "fair-share tenant refused <= 1%" not in s.missed
    fair[2].update(status=503, reason="overloaded", s=0.005)
    s = summary(reqs + fair)
    assert "fair-share tenant refused <= 1%" in s.missed
    assert "fair-share tenant refused 3/200" in line(s)


def test_the_shares_put_the_fair_tenant_at_a_sixth_of_the_capacity() -> None:
    for factor in (1.0, 2.0, 4.0):
        shares_at = shares(factor)
        assert sum(shares_at) == pytest.approx(1.0) and len(shares_at) == 6
        assert shares_at[0] == 0.5 and shares_at[1] == 0.02
        assert shares_at[2] * factor == pytest.approx(1 / 6)  # of the capacity, at any factor

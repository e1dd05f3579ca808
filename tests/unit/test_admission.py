"""Admission at the door (contracts 13.1 and 14.2) without a gateway: the adaptive limit under
its ceiling, the tenant ceiling, fair shares (a quiet tenant is admitted while a noisy one is
over its share), sandbox shed before live, the loop-lag override, what a release teaches the
limit, and the gauges and counters operators read. The ASGI door around it:
tests/unit/test_door.py; through a real gateway: tests/integration/test_gateway_door.py."""

from __future__ import annotations

import pytest
from prometheus_client import REGISTRY

from gateway.door.admission import LIMIT, READS, Admission
from gateway.door.concurrency_limit import QueueDelay

pytestmark = pytest.mark.unit


def metric(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def shed(bound: str) -> float:
    return metric("sluice_admission_shed_total", reason=bound)


def lane(ceiling: int, tenant: int, *, initial: int | None = None, **kw: object) -> Admission:
    """A lane whose limit starts at its ceiling unless told (the adaptive part: test_limit)."""
    start = ceiling if initial is None else initial
    return Admission(ceiling, tenant, initial=start, min_limit=1, **kw)  # type: ignore[arg-type]


def fill(a: Admission, key: str, n: int, sandbox: bool = False) -> None:
    for _ in range(n):
        assert a.admit(key, sandbox) is None


def test_the_ceilings_are_at_least_one_and_the_tenants_within_the_instances() -> None:
    a = Admission(0, 0, initial=20, min_limit=4)
    assert (a.ceiling, a.tenant_ceiling, a.limit) == (1, 1, 1)
    b = Admission(4, 9, initial=2, min_limit=1)
    assert (b.ceiling, b.tenant_ceiling, b.limit) == (4, 4, 2)
    assert metric("sluice_admission_limit", scope="instance") == 2
    assert metric("sluice_admission_limit", scope="tenant") == 4
    c = Admission(50, 2, initial=20, min_limit=4)
    assert (c.ceiling, c.tenant_ceiling, c.limit) == (50, 2, 20)
    assert metric("sluice_admission_limit", scope="instance") == 20
    assert metric("sluice_admission_limit", scope="tenant") == 2
    r = Admission(300, 100, initial=30, min_limit=4, metrics=READS)
    assert metric("sluice_admission_limit", scope="reads") == r.limit == 30
    assert metric("sluice_admission_limit", scope="tenant") == 2  # the reads lane leaves it


def test_at_the_limit_one_tenant_is_refused_and_gets_its_place_back() -> None:
    a = lane(2, 2)
    before, admitted = shed("instance"), metric("sluice_admission_admitted_total")
    fill(a, "t-a", 2)
    assert (a.in_flight, a.per_key[False]) == (2, {"t-a": 2})
    assert metric("sluice_admission_in_flight") == 2
    assert a.admit("t-a") == "instance"
    assert shed("instance") == before + 1
    assert metric("sluice_admission_admitted_total") == admitted + 2
    a.release("t-a", False, None, 2, now=0.0)
    assert (a.in_flight, a.per_key[False], metric("sluice_admission_in_flight")) == (1, {"t-a": 1}, 1)
    assert a.admit("t-a") is None
    a.release("t-a", False, None, 2, now=0.0)
    a.release("t-a", False, None, 2, now=0.0)
    assert (a.in_flight, a.per_key[False]) == (0, {})
    a.release("t-gone", False, None, 2, now=0.0)  # never below zero
    assert a.in_flight == 0 and a.per_key[False] == {}


def test_the_tenant_ceiling_refuses_one_tenant_while_another_is_admitted() -> None:
    a = lane(10, 2)
    before = shed("tenant")
    fill(a, "t-busy", 2)
    assert a.admit("t-busy") == "tenant"
    assert shed("tenant") == before + 1
    assert a.admit("t-quiet") is None
    assert a.per_key[False] == {"t-busy": 2, "t-quiet": 1}


def test_a_quiet_tenant_under_its_share_is_admitted_while_a_noisy_one_is_over_it() -> None:
    a = lane(4, 4)
    fill(a, "t-noisy", 4)  # the whole limit
    assert a.admit("t-noisy") == "instance"
    assert a.admit("t-quiet") is None  # share 4 / 2 = 2: under it while t-noisy holds 4
    assert a.admit("t-quiet") is None  # 1 < 2 still
    assert a.admit("t-quiet") == "instance"  # at its share: refused like everyone
    assert a.admit("t-noisy") == "instance"
    assert a.in_flight == 6


def test_the_top_talker_is_shed_before_a_light_tenant_a_little_over_an_equal_share() -> None:
    a = lane(12, 12)
    fill(a, "t-noisy", 7)
    fill(a, "t-quiet", 2)
    for other in ("t-1", "t-2", "t-3"):
        fill(a, other, 1)
    # Five tenants, a limit of 12: shares of 2.4. t-quiet holds 2, under it: admitted; at 3
    # it is over an equal share, but holds under half of t-noisy's 7: admitted still.
    assert a.admit("t-quiet") is None
    assert a.admit("t-quiet") is None
    assert a.admit("t-quiet") == "instance"  # 4: no longer under half the busiest
    assert a.admit("t-noisy") == "instance"


def test_unknown_credentials_borrow_no_share_but_count_and_have_a_ceiling() -> None:
    a = lane(3, 3)
    fill(a, "t-noisy", 3)
    assert a.admit("cred-1", known=False) == "instance"  # no fair share to claim
    assert a.admit("t-quiet") is None  # a known tenant has one
    b = lane(10, 2)
    assert b.admit("cred-1", known=False) is None
    assert b.admit("cred-1", known=False) is None
    assert b.admit("cred-1", known=False) == "tenant"
    assert (b.in_flight, b.unknown, b.per_key[False]) == (2, {"cred-1": 2}, {})
    b.release("cred-1", False, None, 2, now=0.0, known=False)
    assert b.unknown == {"cred-1": 1} and b.in_flight == 1
    c = lane(2, 2)
    fill(c, "t-test", 2, sandbox=True)
    assert c.admit("cred-live", known=False) is None  # live before sandbox, known or not
    assert c.admit("cred-test", sandbox=True, known=False) == "instance"


def test_tenants_at_equal_shares_borrow_nothing() -> None:
    a = lane(2, 2)
    fill(a, "t-a", 1)
    fill(a, "t-b", 1)
    # Three tenants at the limit of 2: the newcomer's share is one place, nobody is over it.
    assert a.admit("t-c") == "instance"
    assert "t-c" not in a.per_key[False]


def test_nothing_passes_twice_the_ceiling() -> None:
    a = lane(2, 2)
    fill(a, "t-noisy", 2)
    for tenant in ("t-1", "t-2"):
        assert a.admit(tenant) is None  # under their shares (max(1, 2/n))
    assert a.in_flight == 4
    assert a.admit("t-3") == "instance"  # under its share too, but at twice the ceiling


def test_sandbox_is_shed_before_live() -> None:
    a = lane(8, 8, sandbox_share=0.5)
    before = shed("sandbox")
    fill(a, "t-live", 1)
    fill(a, "t-test", 3, sandbox=True)
    # Live work in flight: sandbox sees half the limit (4) and is refused at it, for the live
    # reserve, while live requests still get in.
    assert a.admit("t-test", sandbox=True) == "sandbox"
    assert shed("sandbox") == before + 1
    fill(a, "t-live", 4)
    assert a.in_flight == 8
    # Full: live still gets in while sandbox holds places; sandbox does not.
    assert a.admit("t-live2") is None
    assert a.admit("t-test", sandbox=True) == "instance"
    assert a.admit("t-test2", sandbox=True) == "instance"


def test_sandbox_alone_may_use_the_whole_limit_and_is_fair() -> None:
    a = lane(4, 4, sandbox_share=0.5)
    fill(a, "t-test", 4, sandbox=True)  # no live work: the whole limit
    assert a.admit("t-test", sandbox=True) == "instance"
    assert a.admit("t-other", sandbox=True) is None  # under its share (2) while t-test is over
    assert a.admit("t-other", sandbox=True) is None
    assert a.admit("t-other", sandbox=True) == "instance"  # at its share
    fill(a, "t-live", 1)  # live work arrives (past the limit: sandbox holds places)
    assert a.admit("t-third", sandbox=True) == "instance"  # no sandbox borrowing past the limit now
    b = lane(8, 8, sandbox_share=0.5)
    fill(b, "t-live", 1)
    fill(b, "t-test", 3, sandbox=True)  # at sandbox's cap of 4, under the limit of 8
    assert b.admit("t-test", sandbox=True) == "sandbox"
    assert b.admit("t-other", sandbox=True) is None  # share 2: under it while t-test is over


def test_a_lagging_loop_refuses_new_work_but_not_a_tenant_under_its_share() -> None:
    queue = QueueDelay(target_s=0.005, interval_s=0.1)
    a = lane(10, 10, queue=queue)
    fill(a, "t-noisy", 3)
    queue.observe(0.02, now=0.0)
    queue.observe(0.02, now=0.2)
    assert queue.delayed
    before = shed("queue")
    assert a.admit("t-noisy") == "queue"  # far under the limit, but the loop is late
    assert shed("queue") == before + 1
    assert a.admit("t-quiet") is None  # the quiet tenant still gets its share
    queue.observe(0.001, now=0.3)
    assert a.admit("t-noisy") is None
    floored = Admission(10, 10, initial=10, min_limit=4, queue=queue)
    queue.observe(0.02, now=0.4)
    queue.observe(0.02, now=0.6)
    fill(floored, "t-a", 4)  # a lagging loop still admits up to the limit's floor
    assert floored.admit("t-a") == "queue"


def test_a_release_feeds_the_limit_only_with_a_latency() -> None:
    a = Admission(100, 100, initial=20, min_limit=4, target_s=None)
    now = 0.0
    for _ in range(40):
        now += 0.03
        a.release("t-a", False, None, 20, now=now)  # 4xx: nothing learnt
    assert a.limiter.inner.long.count == 0 and a.limit == 20
    for _ in range(400):  # twelve seconds of steady 50 ms answers with the lane at its limit
        now += 0.03
        a.release("t-a", False, 0.05, a.limit, now=now)
    assert a.limiter.inner.long.count > 0
    grown = a.limit
    assert grown > 20  # it grew
    assert metric("sluice_admission_limit", scope="instance") == grown
    for _ in range(300):
        now += 0.03
        a.release("t-a", False, 1.0, a.limit, now=now)  # twenty times the latency: queueing
    assert a.limit < grown / 2
    assert metric("sluice_admission_limit", scope="instance") == a.limit


def test_the_reads_lane_counts_apart() -> None:
    reads = Admission(2, 2, initial=2, min_limit=1, metrics=READS)
    commands = lane(2, 2)
    before = metric("sluice_admission_read_shed_total", reason="instance")
    commands_before = shed("instance")
    fill(reads, "t-a", 2)
    assert reads.admit("t-a") == "instance"
    assert metric("sluice_admission_read_shed_total", reason="instance") == before + 1
    assert metric("sluice_admission_read_in_flight") == 2
    assert shed("instance") == commands_before
    assert commands.admit("t-a") is None  # the reads' bound does not touch commands


# ---- the gaps mutation testing found (docs/testing/mutation.md) ----


def steady(a: Admission, rtt_s: float, seconds: float = 12.0) -> int:
    """Answers of ``rtt_s`` every 30 ms with the lane at its limit; the limit after."""
    now = 0.0
    while now < seconds:
        now += 0.03
        a.release("t-a", False, rtt_s, a.limit, now=now)
    return a.limit


def test_the_latency_target_reaches_the_limit() -> None:
    # one steady second per answer: the long average is the short one, so only the target
    # (0.5 s) tells the limit it is too slow
    assert steady(Admission(100, 100, initial=20, min_limit=4, target_s=0.5), 1.0) < 20
    assert steady(Admission(100, 100, initial=20, min_limit=4, target_s=None), 1.0) > 20


def test_the_queue_size_reaches_the_limit() -> None:
    # latency that holds grows the limit by the queue size each window: none, no growth
    assert steady(Admission(100, 100, initial=20, min_limit=4, target_s=None, queue_size=0.0), 0.05) == 20
    assert steady(Admission(100, 100, initial=20, min_limit=4, target_s=None, queue_size=8.0), 0.05) > 40


def test_sandbox_beside_live_work_at_a_limit_of_one_gets_no_place() -> None:
    a = lane(2, 2, initial=1)
    assert a.limit == 1 and a._cap(True) == 1  # 0.75 of 1 is floored to one place, not two
    fill(a, "t-live", 1)
    assert a.admit("t-test", sandbox=True) == "instance"


def test_a_new_tenant_is_refused_when_the_busiest_holds_exactly_a_share() -> None:
    a = lane(10, 10)
    for tenant in ("t-a", "t-b", "t-c", "t-d"):
        fill(a, tenant, 2)
    for n in range(2):
        assert a.admit(f"unknown:{n}", known=False) is None
    # a share of 10 over the four tenants and the newcomer is 2: nobody is over it
    assert a.in_flight == 10 and a.admit("t-new") == "instance"
    a.release("unknown:0", False, None, 0, 0.0, known=False)
    fill(a, "t-a", 1)  # t-a now holds 3, over the share of 2: the newcomer gets in
    assert a.admit("t-new") is None


def test_sandbox_at_the_limit_beside_live_work_is_not_let_in_by_fairness() -> None:
    a = lane(8, 8)
    fill(a, "t-noisy", 6, sandbox=True)  # no live work yet: sandbox may use the limit
    fill(a, "t-live", 2)
    assert a.in_flight == a.limit == 8
    # t-quiet is under its sandbox share and t-noisy over it, but the lane is at its limit
    assert a.admit("t-quiet", sandbox=True) == "instance"
    a.release("t-live", False, None, 0, 0.0)
    assert a.admit("t-quiet", sandbox=True) is None  # below the limit: fairness admits it


def test_a_release_that_does_not_move_the_limit_leaves_its_gauge_alone() -> None:
    a = Admission(100, 100, initial=20, min_limit=4, target_s=None)
    a.release("t-a", False, 0.05, 20, now=0.0)  # the window's first sample: no update yet
    assert a.limit == 20
    LIMIT.labels("instance").set(-1)  # a marker: the gauge is written only when the limit moves
    a.release("t-a", False, 0.05, 20, now=0.01)
    assert metric("sluice_admission_limit", scope="instance") == -1
    steady(a, 0.05)
    assert metric("sluice_admission_limit", scope="instance") == a.limit > 20

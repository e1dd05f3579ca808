"""Admission control at the door (contract 13.1) without a gateway: the instance bound and the
per-tenant bound, the refusal a shed command gets, and the gauges and counters operators read.
Through real gateways under load: tests/integration/test_gateway_admission.py."""

from __future__ import annotations

from contextlib import ExitStack

import pytest
from prometheus_client import REGISTRY

from common.errors import ServiceError
from gateway.admission import Admission

pytestmark = pytest.mark.unit


def metric(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def shed(bound: str) -> float:
    return metric("sluice_admission_shed_total", reason=bound)


def refusal(a: Admission, tenant: str) -> ServiceError:
    with pytest.raises(ServiceError) as err, a.slot(tenant):
        pass
    return err.value


def test_the_bounds_are_at_least_one_and_the_tenants_within_the_instances() -> None:
    a = Admission(0, 0)
    assert (a.max_in_flight, a.tenant_max, a.retry_after_s) == (1, 1, 1)
    b = Admission(4, 9, retry_after_s=3)
    assert (b.max_in_flight, b.tenant_max, b.retry_after_s) == (4, 4, 3)
    assert metric("sluice_admission_limit", scope="instance") == 4
    assert metric("sluice_admission_limit", scope="tenant") == 4
    c = Admission(5, 2)
    assert (c.max_in_flight, c.tenant_max) == (5, 2)
    assert metric("sluice_admission_limit", scope="instance") == 5
    assert metric("sluice_admission_limit", scope="tenant") == 2


def test_a_tenant_at_its_bound_is_refused_while_another_is_admitted() -> None:
    a = Admission(3, 2, retry_after_s=2)
    before = shed("tenant")
    with a.slot("t-busy"), a.slot("t-busy"):
        assert (a.in_flight, a.per_tenant["t-busy"]) == (2, 2)
        err = refusal(a, "t-busy")
        assert (err.code, err.status) == ("provider_unavailable", 503)
        assert err.details == {"reason": "overloaded", "bound": "tenant"}
        assert err.headers == {"Retry-After": "2"}
        assert err.message == (
            "the gateway is at capacity; nothing was done: retry with the same Idempotency-Key"
        )
        assert shed("tenant") == before + 1
        with a.slot("t-quiet"):  # the quiet tenant is not held up by the busy one
            assert a.in_flight == 3
    assert (a.in_flight, dict(a.per_tenant)) == (0, {})


def test_the_instance_bound_refuses_every_tenant() -> None:
    a = Admission(2, 2)
    before, tenant_before = shed("instance"), shed("tenant")
    with a.slot("t-a"), a.slot("t-b"):
        err = refusal(a, "t-c")
        assert err.details == {"reason": "overloaded", "bound": "instance"}
        assert err.headers == {"Retry-After": "1"}
        assert shed("instance") == before + 1
        assert shed("tenant") == tenant_before
        assert a.in_flight == 2 and "t-c" not in a.per_tenant


def test_a_place_is_given_back_when_the_command_fails_and_is_counted() -> None:
    a = Admission(2, 1)
    admitted = metric("sluice_admission_admitted_total")
    with pytest.raises(RuntimeError), a.slot("t-a"):
        assert metric("sluice_admission_in_flight") == 1
        raise RuntimeError("the command failed")
    assert metric("sluice_admission_admitted_total") == admitted + 1
    assert metric("sluice_admission_in_flight") == 0
    assert (a.in_flight, dict(a.per_tenant)) == (0, {})
    with a.slot("t-a"):  # the tenant's one place is free again
        assert a.per_tenant == {"t-a": 1}


def test_the_bounds_are_exact() -> None:
    a = Admission(4, 3)
    with ExitStack() as held:
        for n in range(1, 4):
            held.enter_context(a.slot("t-a"))
            assert (a.in_flight, a.per_tenant["t-a"], metric("sluice_admission_in_flight")) == (n, n, n)
        assert refusal(a, "t-a").details["bound"] == "tenant"
        held.enter_context(a.slot("t-b"))
        assert refusal(a, "t-b").details["bound"] == "instance"
        assert a.per_tenant == {"t-a": 3, "t-b": 1}
    assert (a.in_flight, dict(a.per_tenant)) == (0, {})

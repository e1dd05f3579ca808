"""Contract 13.3: a tenant has at most 16 webhook endpoints per mode; the 17th is
400 invalid_request naming endpoint_url and the limit, also when the creations race."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.conftest import Stack, make_tenant

pytestmark = pytest.mark.integration


def _create(stack: Stack, key: str, n: int) -> httpx.Response:
    return httpx.post(
        stack.gateway + "/v1/webhooks",
        json={"endpoint_url": f"http://127.0.0.1:9/hook-{n}"},
        headers={"Authorization": f"Bearer {key}", "Idempotency-Key": uuid.uuid4().hex},
        timeout=60,
    )


def test_the_seventeenth_endpoint_of_a_tenant_and_mode_is_refused(stack: Stack) -> None:
    t = make_tenant(stack, rate_limit=100000)
    with ThreadPoolExecutor(8) as pool:  # concurrent creations: the count is taken under a lock
        answers = list(pool.map(lambda n: _create(stack, t.key, n), range(20)))
    created = [r for r in answers if r.status_code == 201]
    refused = [r for r in answers if r.status_code == 400]
    assert len(created) == 16 and len(refused) == 4, [r.status_code for r in answers]
    details = refused[0].json()["error"]["details"]
    assert details["field"] == "endpoint_url" and details["limit"] == 16, details
    assert details["reason"] == "too_many_endpoints"
    listed = httpx.get(
        stack.gateway + "/v1/webhooks?limit=100", headers={"Authorization": f"Bearer {t.key}"}, timeout=30
    )
    assert len(listed.json()["data"]["items"]) == 16
    other = make_tenant(stack)  # another tenant has its own sixteen
    assert _create(stack, other.key, 1).status_code == 201

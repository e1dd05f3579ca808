"""Lists one page at a time with the Python SDK against the stack, for a list the ledger answers
(customers) and one the webhooks service answers (endpoints): ``list_page(limit=, starting_after=)``
is one request answering ``data``, ``has_more`` and ``next_cursor``; ``next_page`` and
``auto_paging_iter`` go on from it; ``list`` walks every page, ``limit`` being the page size in
both. The TypeScript SDK's side is in clients/typescript/test/stack/endpoints.test.ts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from sluice_sdk import AsyncSluice, Config, Page, Sluice, new_key
from tests.conftest import Stack, make_tenant

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]  # the first test starts the stack


def walk_in_pages(listed: list[str], page: Page[Any], key: Callable[[Any], str], size: int) -> None:
    """``page`` is the first of ``listed`` (every item, in order) cut into pages of ``size``."""
    at = 0
    current: Page[Any] | None = page
    while current is not None:
        assert [key(x) for x in current.data] == listed[at : at + size]
        at += len(current.data)
        assert current.has_more == (at < len(listed)) == (current.next_cursor is not None)
        current = current.next_page()
    assert at == len(listed)


def test_customers_and_endpoints_one_page_at_a_time(stack: Stack) -> None:
    t = make_tenant(stack)
    sluice = Sluice(Config(api_key=t.key, base_url=stack.gateway))
    for i in range(5):
        sluice.customers.create(
            account_type="individual",
            email="p@example.com",
            country_code="US",
            service_user_id=new_key(),
            full_name=f"P{i}",
        )
        sluice.webhooks.create(endpoint_url=f"http://127.0.0.1:9/hook{i}")

    customers = [c["customer_id"] for c in sluice.customers.list(limit=2)]  # every page, two a page
    assert len(customers) == len(set(customers)) == 5
    first = sluice.customers.list_page(limit=2)
    assert len(first) == 2 and first.has_more
    walk_in_pages(customers, first, lambda c: c["customer_id"], 2)
    resumed = sluice.customers.list_page(limit=3, starting_after=first.next_cursor)
    assert [c["customer_id"] for c in resumed] == customers[2:] and not resumed.has_more
    assert resumed.next_cursor is None and resumed.next_page() is None
    assert [c["customer_id"] for c in first.auto_paging_iter()] == customers
    assert [c["customer_id"] for c in sluice.customers.list(starting_after=customers[1])] == customers[2:]

    endpoints = [w["webhook_id"] for w in sluice.webhooks.list(limit=100)]
    assert len(endpoints) == 5
    walk_in_pages(endpoints, sluice.webhooks.list_page(limit=2), lambda w: w["webhook_id"], 2)
    one = sluice.webhooks.list_page(limit=1, starting_after=endpoints[3])
    assert [w["webhook_id"] for w in one] == [endpoints[4]] and not one.has_more


async def test_the_async_client_pages_the_same(stack: Stack) -> None:
    t = make_tenant(stack)
    async with AsyncSluice(Config(api_key=t.key, base_url=stack.gateway)) as sluice:
        made = [
            (await sluice.webhooks.create(endpoint_url=f"http://127.0.0.1:9/h{i}"))["webhook_id"]
            for i in range(3)
        ]
        listed = [w["webhook_id"] async for w in sluice.webhooks.list(limit=1)]
        assert sorted(listed) == sorted(made)
        page = await sluice.webhooks.list_page(limit=2)
        assert [w["webhook_id"] for w in page.data] == listed[:2] and page.has_more
        last = await page.next_page()
        assert last is not None and [w["webhook_id"] for w in last] == listed[2:] and not last.has_more
        assert [w["webhook_id"] async for w in page.auto_paging_iter()] == listed

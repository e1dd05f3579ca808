"""A sandbox tenant with funded wallets, set up the way a partner would: through admin's API
and the gateway's (tenant, key, caps, customers, wallets, virtual accounts, sandbox deposits).
What ``make bench`` and ``make chaos`` measure and break is then a stack a partner set up."""

from __future__ import annotations

import asyncio
import os
import uuid
from decimal import Decimal
from typing import Any

import httpx
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_exponential

SETUP_CONCURRENCY = int(os.environ.get("BENCH_SETUP_CONCURRENCY", "48"))
WALLETS_PER_CUSTOMER = 100
SCOPES = ["customers:write", "wallets:write", "virtual_accounts:write", "transfers:write"]


class _Retry(Exception):
    pass


async def _post(
    client: httpx.AsyncClient, url: str, body: dict[str, Any], headers: dict[str, str]
) -> dict[str, Any]:
    """One creating call, retried with the same Idempotency-Key on 409/429/5xx and timeouts."""
    hs = {**headers, "Idempotency-Key": uuid.uuid4().hex}
    async for attempt in AsyncRetrying(
        retry=retry_if_exception_type((_Retry, httpx.TransportError)),
        wait=wait_exponential(multiplier=0.2, max=5),
        stop=stop_after_attempt(12),
        reraise=True,
    ):
        with attempt:
            r = await client.post(url, json=body, headers=hs)
            if r.status_code in (409, 429) or r.status_code >= 500:
                raise _Retry(f"{r.status_code} {r.text[:200]}")
            if r.status_code not in (200, 201):
                raise RuntimeError(f"set-up call {url} refused: {r.status_code} {r.text[:300]}")
            return dict(r.json()["data"])
    raise AssertionError("unreachable")


async def provision(
    gateway: str,
    admin: str,
    token: str,
    n: int,
    scopes: list[str] = SCOPES,
    funding: str = "1000.00",
    second: str | None = None,
) -> tuple[str, list[str]]:
    """A sandbox tenant with ``n`` USDC wallets funded with ``funding`` each, all through the API;
    (api key, wallet ids). The first wallet (the hot one) gets 100x the others' deposit. Under
    four eyes (production), ``second`` is another approver's token: it approves what ``token``
    proposes."""
    auth = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(timeout=60) as c:

        async def act(action: str, **fields: Any) -> dict[str, Any]:
            r = await c.post(admin + "/", headers=auth, json={"action": action, **fields})
            if r.status_code == 202 and second is not None:
                approve = {"action": "approve_action", "action_id": r.json()["data"]["action_id"]}
                r = await c.post(admin + "/", headers={"Authorization": f"Bearer {second}"}, json=approve)
                if r.status_code == 200:
                    return dict(r.json()["data"]["result"])
            if r.status_code != 200:
                raise RuntimeError(f"admin {action} refused: {r.status_code} {r.text[:300]}")
            return dict(r.json()["data"])

        t = await act(
            "upsert_tenant",
            tenant_name="bench-transfers-" + uuid.uuid4().hex[:8],
            default_mode="sandbox",
            rate_limit_per_minute=1_000_000,
        )
        tid = t["tenant_id"]
        key = (await act("create_api_key", tenant_id=tid, key_label="bench", scopes=scopes))["api_key"]
        await act(
            "set_transfer_cap", tenant_id=tid, mode="sandbox", per_transfer="1000000", daily="1000000000000"
        )
        hs = {"Authorization": f"Bearer {key}"}
        sem = asyncio.Semaphore(SETUP_CONCURRENCY)

        async def customer(i: int) -> str:
            async with sem:
                body = {
                    "account_type": "individual",
                    "email": f"bench{i}@example.com",
                    "country_code": "US",
                    "service_user_id": f"u-{i}",
                    "full_name": "Bench Customer",
                }
                return str((await _post(c, gateway + "/v1/customers", body, hs))["customer_id"])

        customers = await asyncio.gather(*(customer(i) for i in range(-(-n // WALLETS_PER_CUSTOMER))))

        async def wallet(i: int) -> str:
            async with sem:
                cus = customers[i // WALLETS_PER_CUSTOMER]
                w = await _post(
                    c, gateway + "/v1/wallets", {"customer_id": cus, "symbol": "usdc", "chain": "base"}, hs
                )
                va = await _post(
                    c,
                    gateway + "/v1/virtual-accounts",
                    {
                        "customer_id": cus,
                        "currency": "USD",
                        "destination": {
                            "rail": "stablecoin",
                            "currency": "USDC",
                            "address": w["deposit_address"],
                        },
                    },
                    hs,
                )
                amount = str(Decimal(funding) * (100 if i == 0 else 1))
                dep = {"virtual_account_id": va["virtual_account_id"], "amount": amount}
                await _post(c, gateway + "/v1/sandbox/deposits", dep, hs)
                return str(w["wallet_id"])

        wallets = await asyncio.gather(*(wallet(i) for i in range(n)))
    return key, list(wallets)

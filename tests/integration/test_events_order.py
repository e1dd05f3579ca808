"""A partner replays its events after 200 concurrent transfers (docs/guides/webhooks.md, "Order
and recovery"): the events API read oldest first, and one endpoint's deliveries put in
``sequence`` order, each end with every transfer's true state (GET /v1/transfers/{id}),
every step legal in the state machine; newest first is the exact reverse; pages read back
with ``ending_before`` give the same list; numbers strictly increase with no duplicates."""

from __future__ import annotations

import json
import random
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tests.conftest import Stack, Tenant, make_tenant
from tests.support.flows import book, created, funded, send
from tests.support.replay import check_sequences, replay
from tests.support.wait import eventually
from tests.support.webhooks import Receiver

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]  # the first test starts the stack

TRANSFERS = 200
WALLETS = 8
CLIENTS = 16
FINAL = {"completed", "failed", "rejected"}


def withdrawal(src: str, amount: str, to: str) -> dict[str, Any]:
    """USDC out of the suite to an address: pending, then the sandbox moves it on (x.51 fails)."""
    return {
        "source": {
            "payment_rail": "provider_wallet",
            "currency": "USDC",
            "amount": amount,
            "provider_wallet_id": src,
        },
        "destination": {"payment_rail": "stablecoin", "currency": "USDC", "address": to, "chain": "base"},
        "idempotency_key": "wd-" + random.randbytes(12).hex(),  # noqa: S311 - a key, not a secret
    }


def plan_of(wallets: list[str], seed: int) -> list[dict[str, Any]]:
    """Book transfers (completed at once) and, every third, a withdrawal that advances later
    (every fifth of those fails): one event for some transfers, three for others."""
    rng = random.Random(seed)
    out = []
    for i in range(TRANSFERS):
        src = rng.choice(wallets)
        if i % 3 == 0:
            cents = "51" if i % 5 == 0 else f"{rng.randint(10, 49)}"
            out.append(withdrawal(src, f"0.{cents}", "0x" + f"{seed:04x}{i:036x}"))
        else:
            dst = rng.choice([w for w in wallets if w != src])
            out.append(book(src, dst, f"{rng.randint(1, 99) / 100:.2f}"))
    return out


def send_retrying(t: Tenant, body: dict[str, Any]) -> str:
    """One transfer, retried with its key while the gateway sheds load (503)."""
    for _ in range(40):
        r = send(t, "/v1/transfers", body)
        if r.status_code != 503:
            return str(created(r)["transfer_id"])
        time.sleep(float(r.headers.get("Retry-After", "1") or 1))
    raise AssertionError(f"still 503 after 40 tries: {r.text}")


def pages(t: Tenant, **query: str) -> list[dict[str, Any]]:
    """Every event of the tenant, page after page (100 each) along next_cursor."""
    out: list[dict[str, Any]] = []
    cursor = None
    while True:
        params = {"limit": "100", **query, **({"starting_after": cursor} if cursor else {})}
        r = t.get("/v1/events?" + "&".join(f"{k}={v}" for k, v in params.items()))
        assert r.status_code == 200, r.text
        data = r.json()["data"]
        out += data["items"]
        assert data["has_more"] == (data["next_cursor"] is not None), data
        cursor = data["next_cursor"]
        if cursor is None:
            return out


def pages_back(t: Tenant, before: str, order: str) -> list[dict[str, Any]]:
    """Every event before ``before`` in the list's ``order``, read backward (ending_before)."""
    out: list[dict[str, Any]] = []
    while True:
        r = t.get(f"/v1/events?limit=100&order={order}&ending_before={before}")
        assert r.status_code == 200, r.text
        data = r.json()["data"]
        out = data["items"] + out
        if not data["has_more"]:
            return out
        before = data["items"][0]["id"]


def state_of(t: Tenant, transfer_id: str) -> str:
    r = t.get(f"/v1/transfers/{transfer_id}")
    assert r.status_code == 200, r.text  # a shed read (503) is "not yet"
    return str(r.json()["data"]["state"])


def true_states(t: Tenant, ids: list[str]) -> dict[str, str]:
    """Each transfer's state as GET answers it, once every one is final."""

    def final() -> dict[str, str]:
        with ThreadPoolExecutor(8) as pool:
            states = dict(zip(ids, pool.map(lambda i: state_of(t, i), ids), strict=True))
        waiting = {i: s for i, s in states.items() if s not in FINAL}
        assert not waiting, f"{len(waiting)} not final yet"
        return states

    return eventually(final, timeout=180, interval=1)


def test_replaying_events_in_sequence_order_ends_with_every_transfers_true_state(stack: Stack) -> None:
    t = make_tenant(stack, rate_limit=100_000)
    receiver = Receiver().start()
    try:
        r = t.post("/v1/webhooks", {"endpoint_url": receiver.url})
        assert r.status_code == 201, r.text
        with ThreadPoolExecutor(WALLETS) as pool:
            wallets = [w["wallet_id"] for w in pool.map(lambda _: funded(t, "1000.00"), range(WALLETS))]
        with ThreadPoolExecutor(CLIENTS) as pool:
            ids = list(pool.map(lambda body: send_retrying(t, body), plan_of(wallets, 54)))
        truth = true_states(t, ids)
        assert {"completed", "failed"} <= set(truth.values())

        def replayed() -> list[dict[str, Any]]:  # the events API has caught up with the ledger
            oldest_first = pages(t, order="asc")
            assert replay(oldest_first) == truth
            return oldest_first

        oldest_first = eventually(replayed, timeout=60, interval=1)
        check_sequences(oldest_first)
        assert len(oldest_first) >= TRANSFERS + 4 * WALLETS
        newest_first = pages(t)
        assert [e["id"] for e in newest_first] == [e["id"] for e in reversed(oldest_first)]
        # Read backward from the newest event: the same list, in either order.
        assert pages_back(t, newest_first[0]["id"], "asc") == oldest_first[:-1]
        assert pages_back(t, oldest_first[0]["id"], "desc") == newest_first[:-1]

        listed = {e["id"]: e for e in oldest_first}
        eventually(
            lambda: set(listed) <= {x.headers["x-service-webhook-id"] for x in receiver.received}, timeout=60
        )
        delivered = {}
        for x in receiver.received:  # at least once: the same id may come twice, the same body
            delivered[x.headers["x-service-webhook-id"]] = json.loads(x.body)
        assert delivered == listed  # each delivery carries the event's body, its sequence with it
        by_sequence = sorted(delivered.values(), key=lambda e: e["sequence"])
        check_sequences(by_sequence)
        assert replay(by_sequence) == truth
    finally:
        receiver.stop()

"""The same-contract baseline of ``make bench`` (tools.bench.samecontract) does the suite's
work, in one process, against the test stack's stores: a tenant made through admin, its wallets
funded through the baseline's own API, a webhook endpoint made through the suite's gateway; then
300 book transfers from 24 concurrent clients, and per transfer what the suite would leave:
answered 201 completed, compliance's decision to allow it, the ledger's transfer row completed,
one journal entry and two postings (it settles at once), its event stored by webhooks with one
delivery to the tenant's endpoint; the tenant's hash chain verifies (ledger.verification); a replay with the
same Idempotency-Key answers the original and adds no row; a bad API key is refused 401 with
its reason; a transfer over the per-transfer cap is refused with the cap's reason and leaves
no transfer row. Then a tiny CPU sweep (tools.bench.sweep) of the baseline and the suite with
that tenant (both read the same stores): two low rates, a rate above the baseline's (given)
capacity printed as such and not run, every point run answered 2xx with CPU counted, and the
suite's CPU per transfer over the baseline's at the lower rate is a figure.

Correctness, not speed: no figure is asserted (``make bench`` measures the baseline).
"""

from __future__ import annotations

import asyncio
import random
import uuid
from typing import Any

import asyncpg
import httpx
import pytest
from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine

from common.contracts import Ctx
from common.contracts.commands import VerifyJournal
from ledger import verification
from ledger.config import LedgerConfig
from tests.conftest import ADMIN_TOKEN, Stack
from tests.support.db import pg_kwargs
from tools.bench import sweep
from tools.bench.abab import STORES_OF_THE_SAME_CONTRACT, monolith_processes
from tools.bench.load import transfer
from tools.bench.measure import baseline_process
from tools.stack.provision import provision

pytestmark = [pytest.mark.integration, pytest.mark.long, pytest.mark.timeout(900)]

TRANSFERS, CLIENTS, WALLETS = 300, 24, 12
RETRIES = 10
SWEEP_RATES, SWEEP_S = (4.0, 8.0), 3.0  # the tiny sweep: rates below both systems' capacities
BOOK_EVENTS = (
    1  # completed in the ledger's batch: one transfer.created, state completed (ledger.core.transfers)
)


async def _send(base: str, key: str, wallets: list[str]) -> dict[str, dict[str, Any]]:
    """TRANSFERS transfers of 0.01 from CLIENTS concurrent clients, each retried with its
    Idempotency-Key on 503 as the contract says: transfer id -> its answer and what was sent
    (a retry that booked twice would show as two rows for one key, or two answers)."""
    out: dict[str, dict[str, Any]] = {}
    retried: list[str] = []
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(TRANSFERS):
        queue.put_nowait(i)

    async def client(c: httpx.AsyncClient) -> None:
        while not queue.empty():
            queue.get_nowait()
            src, dst = random.sample(wallets, 2)
            idem = uuid.uuid4().hex
            body = transfer(src, dst, idem)
            for attempt in range(RETRIES):
                r = await c.post("/v1/transfers", json=body, headers={"Idempotency-Key": idem})
                if r.status_code != 503:
                    break
                # A partner retries with the same key: one tenant's transactions queue on its
                # day's cap (compliance locks it) and the pool's wait is bounded.
                assert r.json()["error"]["details"]["reason"] == "store_unavailable", r.text
                retried.append(idem)
                await asyncio.sleep(0.2 * (attempt + 1))
            assert r.status_code == 201, r.text
            data = r.json()["data"]
            out[data["transfer_id"]] = {"answer": r.json(), "body": body, "idem": idem}

    auth = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=base, headers=auth, timeout=60) as c:
        await asyncio.gather(*(client(c) for _ in range(CLIENTS)))
    print(f"{TRANSFERS} transfers, {len(retried)} retries after 503 store_unavailable")
    return out


async def _rows(stack: Stack, tenant: str, ids: list[str]) -> dict[str, Any]:
    db = await asyncpg.connect(**pg_kwargs(stack.stores.database_url))
    try:
        states = dict(
            await db.fetch("SELECT id, state FROM ledger.transfers WHERE id = ANY($1::text[])", ids)
        )
        entries = await db.fetch(
            "SELECT e.transfer_id, count(DISTINCT e.id) AS entries, count(p.id) AS postings"
            " FROM ledger.journal_entries e JOIN ledger.postings p ON p.entry_id = e.id"
            " WHERE e.transfer_id = ANY($1::text[]) GROUP BY e.transfer_id",
            ids,
        )
        events = await db.fetch(
            "SELECT v.event_id, v.body, count(d.id) AS deliveries FROM webhooks.events v"
            " LEFT JOIN webhooks.deliveries d ON d.event_id = v.event_id"
            " WHERE v.tenant_id = $1 AND v.type LIKE 'transfer.%' GROUP BY v.event_id, v.body",
            tenant,
        )
        decisions = await db.fetch(
            "SELECT transfer_id, count(*) AS n FROM compliance.decisions WHERE transfer_id = ANY($1::text[])"
            " AND outcome = 'allow' GROUP BY transfer_id",
            ids,
        )
        transfers = await db.fetchval("SELECT count(*) FROM ledger.transfers WHERE tenant_id = $1", tenant)
    finally:
        await db.close()
    return {
        "states": states,
        "entries": {r["transfer_id"]: (r["entries"], r["postings"]) for r in entries},
        "events": [(bytes(r["body"]), r["deliveries"]) for r in events],
        "decisions": {r["transfer_id"]: r["n"] for r in decisions},
        "transfers": transfers,
    }


async def _verify(stack: Stack, tenant: str) -> dict[str, Any]:
    cmd = VerifyJournal(
        command_id="c-" + uuid.uuid4().hex,
        ctx=Ctx(request_id="r", tenant_id="", mode="sandbox"),
        target_tenant_id=tenant,
        mode="sandbox",
    )
    engine = create_async_engine(stack.settings().database_url)
    try:
        async with async_sessionmaker(engine)() as session, session.begin():
            return dict((await verification.verify_journal(session, cmd, LedgerConfig())).data)
    finally:
        await engine.dispose()


def _tenant_of(stack: Stack, wallet: str) -> str:
    async def read() -> str:
        db = await asyncpg.connect(**pg_kwargs(stack.stores.database_url))
        try:
            return str(await db.fetchval("SELECT tenant_id FROM ledger.wallets WHERE id = $1", wallet))
        finally:
            await db.close()

    return asyncio.run(read())


def _endpoint(stack: Stack, tenant: str) -> None:
    """A webhook endpoint of the tenant, made through the suite's gateway (the baseline serves
    only what compliance decides); nothing listens there: its deliveries only wait."""
    k = stack.admin_call("create_api_key", tenant_id=tenant, key_label="hooks", scopes=["webhooks:write"])
    assert k.status_code == 200, k.text
    r = httpx.post(
        stack.gateway + "/v1/webhooks",
        json={"endpoint_url": "http://127.0.0.1:9/hook"},
        headers={
            "Authorization": f"Bearer {k.json()['data']['api_key']}",
            "Idempotency-Key": uuid.uuid4().hex,
        },
        timeout=30,
    )
    assert r.status_code == 201, r.text


def _tiny_sweep(stack: Stack, base: str, baseline_pid: int, key: str, wallets: list[str]) -> None:
    """Two low rates on both systems, the baseline's capacity given as the lower one: its higher
    point is above it (not run); the others answer 2xx with CPU counted, and the lower rate's
    pair gives the suite's multiple of the baseline's CPU per transfer."""
    services = [*stack.procs.values(), *stack.gateways]  # the two gateways share a name
    suite_pids = {f"{p.name}-{p.popen.pid}": p.popen.pid for p in services} | stack.stores.named_processes()
    tenants = [{"key": key, "wallets": wallets, "share": 1.0}]
    where = {
        "samecontract": (
            base + "/v1/transfers",
            tenants,
            monolith_processes(suite_pids, baseline_pid, STORES_OF_THE_SAME_CONTRACT),
        ),
        "suite": (stack.gateway + "/v1/transfers", tenants, suite_pids),
    }
    low, high = SWEEP_RATES
    planned = [p for p in sweep.plan(SWEEP_RATES, {"samecontract": low, "suite": high}) if not p.at_capacity]
    done = sweep.sweep(planned, where, lambda: None, SWEEP_S)
    above = [p for p in done if p.above]
    assert [(p.system, p.rate, p.ran) for p in above] == [("samecontract", high, False)]
    assert sweep.line(above[0]) == (
        f"sweep: samecontract {high:.0f}/s above its capacity {low:.0f}/s: not run, no CPU figure"
    )
    for p in (p for p in done if not p.above):
        assert p.ran and p.offered == int(p.rate * SWEEP_S) and p.ok == p.offered, p
        assert p.cpu_ms is not None and p.cpu_ms > 0, p
        assert sweep.line(p).startswith(f"sweep: {p.system} {p.rate:.0f}/s cpu_ms "), sweep.line(p)
    multiple, why = sweep.fixed_multiple(done, low)
    assert why is None and multiple is not None and multiple > 0, why


def test_samecontract_does_the_suites_work(stack: Stack) -> None:
    with baseline_process("samecontract", "", env=stack.env) as (baseline, base):
        key, wallets = asyncio.run(provision(base, stack.admin, ADMIN_TOKEN, WALLETS, funding="1000.00"))
        tenant = _tenant_of(stack, wallets[0])
        _endpoint(stack, tenant)
        sent = asyncio.run(_send(base, key, wallets))
        assert len(sent) == TRANSFERS
        ids = list(sent)
        rows = asyncio.run(_rows(stack, tenant, ids))
        for tid, s in sent.items():
            assert s["answer"]["data"]["state"] == "completed", s["answer"]
            assert rows["decisions"].get(tid) == 1, tid  # compliance's decision, once
            assert rows["states"].get(tid) == "completed", tid
            assert rows["entries"].get(tid) == (1, 2), (tid, rows["entries"].get(tid))
            mine = [d for body, d in rows["events"] if tid.encode() in body]
            assert len(mine) == BOOK_EVENTS and all(d == 1 for d in mine), (tid, mine)
        assert rows["transfers"] == TRANSFERS  # no retry booked twice
        verified = asyncio.run(_verify(stack, tenant))
        assert verified["ok"] is True and verified["entries"] >= TRANSFERS, verified

        # A replay answers the original, and adds no row.
        tid, first = next(iter(sent.items()))
        again = httpx.post(
            base + "/v1/transfers",
            json=first["body"],
            headers={"Authorization": f"Bearer {key}", "Idempotency-Key": first["idem"]},
            timeout=30,
        )
        assert again.status_code == 201 and again.headers.get("x-idempotent-replay") == "true", again.text
        assert again.json() == first["answer"]
        assert asyncio.run(_rows(stack, tenant, ids))["transfers"] == rows["transfers"]

        # A bad key: 401 with its reason, as the gateway words it (its 401s carry no
        # details.reason: the code and message are the reason).
        bad = httpx.post(
            base + "/v1/transfers",
            json=transfer(wallets[0], wallets[1], "bad-key"),
            headers={"Authorization": "Bearer sk_sandbox_" + "x" * 40, "Idempotency-Key": "bad-key"},
            timeout=30,
        )
        assert bad.status_code == 401 and bad.headers.get("www-authenticate") == "Bearer", bad.text
        assert bad.json()["error"]["code"] == "unauthorized", bad.text
        assert bad.json()["error"]["message"] == "invalid API key", bad.text

        # Over the per-transfer cap (tools.stack.provision sets 1,000,000): the cap's reason.
        idem = uuid.uuid4().hex
        over = {**transfer(wallets[0], wallets[1], idem)}
        over["source"] = {**over["source"], "amount": "2000000.00"}
        capped = httpx.post(
            base + "/v1/transfers",
            json=over,
            headers={"Authorization": f"Bearer {key}", "Idempotency-Key": idem},
            timeout=30,
        )
        details = capped.json()["error"]["details"]
        assert capped.status_code in (400, 403, 422), capped.text
        assert details["reason"] == "transfer_cap_exceeded" and details["limit"] == "per_transfer", details
        assert asyncio.run(_rows(stack, tenant, ids))["transfers"] == rows["transfers"]

        _tiny_sweep(stack, base, baseline.pid, key, wallets)

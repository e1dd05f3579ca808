"""The partner SDKs against the real stack: the README walk-throughs, a transfer
whose answer is lost and retried makes exactly one transfer, a shedding gateway sees the clients
back off and every operation complete once, a webhook from the stack verifies and a tampered or
stale one is refused. The TypeScript SDK's stack tests (clients/typescript/test/stack, node
--test) run against the same stack from here."""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest
from standardwebhooks.webhooks import Webhook

from sluice_api.api.customers import post_v1_customers
from sluice_api.api.transfers import post_v1_transfers
from sluice_api.api.wallets import get_v1_wallets_by_wallet_id
from sluice_api.api.webhooks import post_v1_webhooks
from sluice_sdk import (
    Config,
    ConnectionFailed,
    IdempotencyConflict,
    InvalidRequest,
    RateLimited,
    RetryPolicy,
    Sluice,
    SluiceError,
    WebhookRefused,
    new_key,
    response_of,
    verify_webhook,
)
from tests.conftest import Stack, Tenant, customer_body, make_tenant
from tests.support.admin import db
from tests.support.dropping_proxy import DroppingProxy
from tests.support.flows import book, funded
from tests.support.node import TS, node_test
from tests.support.webhooks import Receiver
from tools.stack.processes import free_port
from tools.stack.suite import Proc

pytestmark = [pytest.mark.integration, pytest.mark.long]
EXAMPLES = Path(__file__).resolve().parents[2] / "clients" / "python" / "examples"


@pytest.fixture(scope="module")
def shedding(stack: Stack) -> Iterator[Proc]:
    """A gateway admitting one command at a time, each held 0.3 s after its publish: most of a
    burst is shed with 503 overloaded and Retry-After."""
    gw = stack.suite.start(
        "gateway",
        free_port(),
        extra={
            "SLUICE_MAX_IN_FLIGHT": "1",
            "SLUICE_TENANT_MAX_IN_FLIGHT": "1",
            "SLUICE_FAILPOINTS": "rpc.after_send=sleep(0.3)",
        },
        instance="gateway-sdk-shedding",
    )
    try:
        stack.suite.wait_ready([gw], timeout=float(os.environ.get("SLUICE_TEST_READY_S", "300")))
        yield gw
    finally:
        stack.suite.stop_proc(gw)


def sdk(t: Tenant, url: str, **retry: float) -> Sluice:
    return Sluice(Config(api_key=t.key, base_url=url, retry=RetryPolicy(**retry)))  # type: ignore[arg-type]


ACCESS_LOG = re.compile(r'INFO: +\S+ - "[^"\n]*" \d{3}[^\n]*\n')


def test_the_python_walkthrough_runs(stack: Stack, tenant: Tenant) -> None:
    env = {
        **os.environ,
        "SLUICE_API_URL": stack.gateway,
        "SLUICE_SANDBOX_KEY": tenant.key,
        "RECEIVER_PORT": str(free_port()),
        "PYTHONPATH": os.pathsep.join([str(EXAMPLES.parent), str(EXAMPLES)]),
    }
    run = subprocess.run(
        [sys.executable, str(EXAMPLES / "walkthrough.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    # The receiver's uvicorn writes its access log to stdout from another thread, one whole
    # record per write, which can land between the parts of a print (seen once in a full run):
    # take the records out before reading the walk-through's own lines.
    lines = ACCESS_LOG.sub("", run.stdout).splitlines()
    assert "transfer completed" in lines, lines
    balances = [Decimal(line.split()[1]) for line in lines if line.startswith("balance ")]
    assert balances == [Decimal("75"), Decimal("25")], lines
    assert "webhook transfer.created True" in lines, lines


def test_a_transfer_whose_answer_is_lost_is_retried_and_made_once(stack: Stack) -> None:
    t = make_tenant(stack, rate_limit=100000)
    src, dst = funded(t, "10.00")["wallet_id"], funded(t, "1.00")["wallet_id"]
    key = new_key()
    with DroppingProxy(stack.gateway, drops=1) as proxy:
        sluice = sdk(t, proxy.url, max_attempts=4, base_s=0.05)
        created = sluice.call(post_v1_transfers.sync_detailed, body=book(src, dst, "1.50", key)).data
        assert proxy.dropped == 1 and sluice.stats.retries == 1 and sluice.stats.unreached == 1
    rows = db(stack, "SELECT id FROM ledger.transfers WHERE idempotency_key = $1", key)
    assert [r["id"] for r in rows] == [created.transfer_id]
    direct = sdk(t, stack.gateway)
    balance = direct.call(get_v1_wallets_by_wallet_id.sync_detailed, wallet_id=src).data.available_balance
    assert Decimal(str(balance)) == Decimal("8.50")


def test_a_shedding_gateway_sees_clients_back_off_and_every_operation_done_once(
    stack: Stack, shedding: Proc
) -> None:
    t = make_tenant(stack, rate_limit=100000)
    src, dst = funded(t, "50.00")["wallet_id"], funded(t, "1.00")["wallet_id"]
    clients = [sdk(t, shedding.url, max_attempts=60, base_s=0.05, cap_s=1.0) for _ in range(4)]
    waits: list[tuple[str | None, float, float | None]] = []
    for c in clients:
        c.on_retry = lambda failure, attempt, delay: waits.append(
            (failure.reason, delay, failure.retry_after)
        )
    keys = [[new_key() for _ in range(3)] for _ in clients]
    failures: list[SluiceError] = []

    def work(c: Sluice, mine: list[str]) -> None:
        try:
            for key in mine:
                c.call(post_v1_transfers.sync_detailed, body=book(src, dst, "0.25", key))
        except SluiceError as exc:  # reported below, with the others
            failures.append(exc)

    threads = [threading.Thread(target=work, args=(c, k)) for c, k in zip(clients, keys, strict=True)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=240)
    assert failures == []
    shed = [w for w in waits if w[0] == "overloaded"]
    assert shed, waits  # the gateway shed, the clients retried
    assert all(delay >= (after or 0) for _, delay, after in shed)  # never before Retry-After
    assert sum(c.stats.refused for c in clients) >= len(shed)
    every = [k for mine in keys for k in mine]
    rows = db(stack, "SELECT idempotency_key FROM ledger.transfers WHERE idempotency_key = ANY($1)", every)
    assert sorted(r["idempotency_key"] for r in rows) == sorted(every)  # each once, none lost
    left = sdk(t, stack.gateway).call(get_v1_wallets_by_wallet_id.sync_detailed, wallet_id=src).data
    assert Decimal(str(left.available_balance)) == Decimal("50.00") - Decimal("0.25") * len(every)


def test_a_webhook_from_the_stack_verifies_and_a_tampered_or_stale_one_is_refused(stack: Stack) -> None:
    t = make_tenant(stack)
    receiver = Receiver().start()
    try:
        sluice = sdk(t, stack.gateway)
        hook = sluice.call(post_v1_webhooks.sync_detailed, body={"endpoint_url": receiver.url}).data
        cus = sluice.call(post_v1_customers.sync_detailed, body=customer_body()).data
        deadline = time.monotonic() + 60
        while not receiver.received and time.monotonic() < deadline:
            time.sleep(0.1)
        assert receiver.received, "no delivery"
        got = receiver.received[0]
    finally:
        receiver.stop()
    event = verify_webhook(got.body, got.headers, hook.signing_secret)
    assert event["type"] == "customer.created" and event["data"]["customer_id"] == cus.customer_id
    with pytest.raises(WebhookRefused):
        verify_webhook(got.body.replace(b"customer", b"c0stomer", 1), got.headers, hook.signing_secret)
    stale_at = datetime.fromtimestamp(time.time() - 600, UTC)
    stale = {
        **got.headers,
        "x-service-timestamp": str(int(stale_at.timestamp())),
        "x-service-signature": Webhook(hook.signing_secret).sign(
            got.headers["x-service-webhook-id"], stale_at, got.body.decode()
        ),
    }
    with pytest.raises(WebhookRefused):
        verify_webhook(got.body, stale, hook.signing_secret)  # correctly signed, 10 minutes old
    other = "whsec_" + base64.b64encode(uuid.uuid4().bytes * 2).decode()
    with pytest.raises(WebhookRefused):
        verify_webhook(got.body, got.headers, other)
    assert json.loads(got.body)["id"] == got.headers["x-service-webhook-id"]


def test_typed_errors_carry_code_reason_and_request_id(stack: Stack, tenant: Tenant) -> None:
    sluice = sdk(tenant, stack.gateway)
    with pytest.raises(SluiceError) as info:
        sluice.call(post_v1_customers.sync_detailed, body=customer_body(country_code="JP"))
    assert info.value.code == "forbidden" and info.value.reason == "jurisdiction_restricted"
    assert info.value.request_id and info.value.status == 403


def test_events_page_both_ways_by_sequence_through_the_sdk(stack: Stack) -> None:
    """events.list_page with order and ending_before against the stack: oldest first is newest
    first reversed, and previous_page goes back to where next_page came from."""
    t = make_tenant(stack)
    sluice = sdk(t, stack.gateway)
    for _ in range(3):
        sluice.customers.create(**customer_body())  # type: ignore[arg-type]
    deadline = time.monotonic() + 30
    while len(newest := list(sluice.events.list(limit=100))) < 3:
        assert time.monotonic() < deadline, newest
        time.sleep(0.2)
    ids = [e["id"] for e in newest]
    oldest = sluice.events.list_page(limit=2, order="asc")
    assert [e["id"] for e in oldest.data] == ids[::-1][:2] and oldest.has_more
    assert oldest.previous_page() is None  # the first page
    last = oldest.next_page()
    assert last is not None and [e["id"] for e in last.data] == ids[::-1][2:] and not last.has_more
    back = last.previous_page()
    assert back is not None and [e["id"] for e in back.data] == ids[::-1][:2] and not back.has_more
    before = sluice.events.list_page(limit=2, ending_before=ids[2])
    assert [e["id"] for e in before.data] == ids[:2]
    assert [e["sequence"] for e in newest] == sorted((e["sequence"] for e in newest), reverse=True)


def test_the_typescript_sdk_against_the_stack(stack: Stack, shedding: Proc) -> None:
    t = make_tenant(stack, rate_limit=100000)
    with DroppingProxy(stack.gateway, drops=1) as proxy:
        env = {
            "SLUICE_API_URL": stack.gateway,
            "SLUICE_SANDBOX_KEY": t.key,
            # a tenant of its own for test/stack/endpoints.test.ts's pages: nothing else lists there
            "SLUICE_PAGES_KEY": make_tenant(stack).key,
            "DROPPING_PROXY_URL": proxy.url,
            "SHEDDING_GATEWAY_URL": shedding.url,
            "RECEIVER_PORT": str(free_port()),
        }
        report = node_test("test/stack", env=env, timeout_s=400)
        assert proxy.dropped == 1
    assert "walkthrough" in report
    assert "errors in words: request id and replay flag" in report
    assert (TS / "dist" / "examples" / "walkthrough.js").exists()


def test_secret_rotation_end_to_end_old_and_new_secret_verify_during_the_overlap(stack: Stack) -> None:
    """Resources end to end: create an endpoint, rotate its secret, and a delivery made after the
    rotation verifies with the old secret alone and with the new one alone (two signatures,
    docs/guides/webhooks.md, "Rotate a secret"). Broken when either secret stops verifying during
    the overlap."""
    t = make_tenant(stack)
    receiver = Receiver().start()
    try:
        sluice = Sluice(Config(api_key=t.key, base_url=stack.gateway))
        hook = sluice.webhooks.create(endpoint_url=receiver.url)
        rotated = sluice.webhooks.rotate_secret(hook["webhook_id"])
        old, new = hook["signing_secret"], rotated["signing_secret"]
        assert old != new and rotated["webhook_id"] == hook["webhook_id"]
        cus = sluice.customers.create(
            account_type="individual",
            email="ada@example.com",
            country_code="US",
            service_user_id=new_key(),
            full_name="Ada",
        )
        deadline = time.monotonic() + 60
        while not receiver.received and time.monotonic() < deadline:
            time.sleep(0.1)
        assert receiver.received, "no delivery"
        got = receiver.received[0]
    finally:
        receiver.stop()
    assert len(got.headers["x-service-signature"].split()) == 2, got.headers
    for secrets in (old, new, [new, old]):
        event = verify_webhook(got.body, got.headers, secrets)
        assert event["type"] == "customer.created" and event["data"]["customer_id"] == cus["customer_id"]
    with pytest.raises(WebhookRefused):
        verify_webhook(got.body, got.headers, "whsec_" + base64.b64encode(uuid.uuid4().bytes * 2).decode())


def test_resources_replay_by_key_and_raise_409_and_429_typed(stack: Stack) -> None:
    """Against the gateway: a per-call idempotency key replays the first answer, the same key
    with another body is IdempotencyConflict (not retried), and a tenant over its rate limit
    gets RateLimited carrying Retry-After and the request id. Broken when the per-call key is
    not sent (a second customer is made) or a 409 is retried."""
    t = make_tenant(stack, rate_limit=6)
    sluice = Sluice(Config(api_key=t.key, base_url=stack.gateway, retry=RetryPolicy(max_attempts=3)))
    key = new_key()

    def create(user: str) -> str:
        made = sluice.customers.create(
            account_type="individual",
            email="ada@example.com",
            country_code="US",
            service_user_id=user,
            full_name="Ada",
            options={"idempotency_key": key},
        )
        return made["customer_id"]

    assert create("u-same") == create("u-same")  # the second is the first's answer, replayed
    attempts = sluice.stats.attempts
    with pytest.raises(IdempotencyConflict) as conflict:
        create("u-other")
    assert sluice.stats.attempts == attempts + 1 and conflict.value.status == 409
    assert len(list(sluice.customers.list(options={"max_attempts": 1}))) == 1
    with pytest.raises(RateLimited) as limited:
        for _ in range(12):
            sluice.health.retrieve(options={"max_attempts": 1})
    assert limited.value.retry_after is not None and 0 <= limited.value.retry_after <= 60
    assert limited.value.request_id and limited.value.status == 429


def test_a_lost_answer_is_connection_failed_and_the_same_key_replays_it(stack: Stack) -> None:
    """Errors in words against the stack (docs/guides/errors.md, "In the SDKs"): a transfer whose
    answer the network loses raises ConnectionFailed, the network's exception as its cause (not
    Throttled); sent again with its key, the answer is the first one, marked a replay, with its
    own request id; a body the gateway refuses is a sentence naming the field, the pattern a
    detail; a wallet that cannot pay is 400 invalid_request, as the errors guide's table says."""
    t = make_tenant(stack, rate_limit=100000)
    src, dst = funded(t, "10.00")["wallet_id"], funded(t, "1.00")["wallet_id"]
    body = book(src, dst, "1.50", new_key())
    with DroppingProxy(stack.gateway, drops=1) as proxy:
        lossy = sdk(t, proxy.url, max_attempts=1)
        with pytest.raises(ConnectionFailed) as lost:
            lossy.transfers.create(**body)
        assert proxy.dropped == 1 and isinstance(lost.value.__cause__, Exception)
        assert lossy.stats.unreached == 1 and lossy.stats.throttled == 0
    sluice = sdk(t, stack.gateway)
    again = sluice.transfers.create(**body)
    info = response_of(again)
    assert info.replayed and info.status == 201 and info.request_id, info
    fresh = sluice.transfers.create(**book(src, dst, "0.50", new_key()))
    assert not response_of(fresh).replayed and response_of(fresh).request_id not in (None, info.request_id)
    rows = db(stack, "SELECT id FROM ledger.transfers WHERE idempotency_key = $1", body["idempotency_key"])
    assert [r["id"] for r in rows] == [again["transfer_id"]]
    with pytest.raises(InvalidRequest) as refused:
        sluice.customers.create(**customer_body(country_code="us"))  # type: ignore[arg-type]
    assert refused.value.field == "country_code" and refused.value.details["pattern"] == r"^[A-Z]{2}$(?!\n)"
    assert refused.value.message.startswith("country_code must be a two-letter ISO 3166-1 country code")
    with pytest.raises(InvalidRequest) as poor:
        sluice.transfers.create(**book(src, dst, "100.00", new_key()))
    assert poor.value.status == 400 and poor.value.reason == "insufficient_funds"
    assert poor.value.field == "source.amount"

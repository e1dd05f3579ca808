"""Onboarding links and the public signup screen, driven by a real headless Chromium."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from playwright.sync_api import Browser, sync_playwright

from common.contracts import Ctx, encode
from common.contracts.commands import CreateCustomer
from common.ids import new_id
from common.settings import Settings
from gateway.onboarding.links import sign
from tests.conftest import ARTIFACTS, Stack, Tenant, make_tenant
from tests.support.admin import admin_ok, db, events_for
from tests.support.db import run_async
from tools.stack.suite import Proc

pytestmark = pytest.mark.integration

HOSTILE = "<script>alert(1)</script>"
LOGO_SVG = (
    b'<svg xmlns="http://www.w3.org/2000/svg" width="120" height="40">'
    b'<rect width="120" height="40" fill="#FFAA00"/></svg>'
)
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


def _branded(stack: Stack, app_name: str = "Acme Pay") -> Tenant:
    t = make_tenant(stack)
    admin_ok(
        stack,
        "upsert_tenant",
        tenant_id=t.tenant_id,
        metadata={
            "white_label": {
                "enabled": True,
                "app_name": app_name,
                "logo_url": "https://cdn.acme.example/logo.svg",
                "primary_color": "#5B2A86",
                "accent_color": "#FFAA00",
                "support_email": "help@acme.example",
            }
        },
    )
    return t


def _link(t: Tenant, gateway: int = 0, **body: Any) -> dict[str, Any]:
    r = t.post("/v1/onboarding-authorizations", {"service_user_id": "eu-" + uuid.uuid4().hex[:8], **body})
    assert r.status_code == 201, r.text
    return r.json()["data"]


def _local(stack: Stack, url: str, gateway: int = 0) -> str:
    """The link as this test reaches it (the suite's gateways listen on random ports)."""
    return stack.gateways[gateway].url + urlsplit(url).path


def _form(**over: str) -> dict[str, str]:
    return {"full_name": "Grace Hopper", "email": "grace@example.com", "country_code": "us", **over}


def test_issue_link_shape_and_refusals(stack: Stack) -> None:
    t = make_tenant(stack)
    key = uuid.uuid4().hex
    r = t.post(
        "/v1/onboarding-authorizations",
        {"service_user_id": "eu-1", "email": "a@b.example", "account_type": "individual"},
        idem=key,
    )
    assert r.status_code == 201, r.text
    d = r.json()["data"]
    assert d["authorization_id"].startswith("onb_")
    assert d["url"].startswith("http://127.0.0.1:8000/onboarding/")  # SLUICE_PUBLIC_BASE_URL
    expires = datetime.fromisoformat(d["expires_at"].replace("Z", "+00:00"))
    assert timedelta(seconds=880) < expires - datetime.now(UTC) <= timedelta(seconds=901)
    again = t.post(
        "/v1/onboarding-authorizations",
        {"service_user_id": "eu-1", "email": "a@b.example", "account_type": "individual"},
        idem=key,
    )
    assert again.json()["data"] == d and again.headers["x-idempotent-replay"] == "true"
    assert (
        db(
            stack,
            "SELECT count(*) AS n FROM gateway.onboarding_authorizations WHERE tenant_id = $1",
            t.tenant_id,
        )[0]["n"]
        == 1
    )
    routed = httpx.post(
        stack.gateway + "/",
        json={"service_user_id": "eu-2", "expires_in_seconds": 60},
        headers=t.headers(uuid.uuid4().hex, **{"x-service-route": "/v1/onboarding-authorizations"}),
    )
    assert routed.status_code == 201, routed.text
    for body, field in [
        ({"service_user_id": "x", "expires_in_seconds": 59}, "expires_in_seconds"),
        ({"service_user_id": "x", "expires_in_seconds": 3601}, "expires_in_seconds"),
        ({"service_user_id": "x", "redirect_url": "http://evil.example/"}, "redirect_url"),
        ({"service_user_id": "x", "account_type": "robot"}, "account_type"),
        ({}, "service_user_id"),
    ]:
        r = t.post("/v1/onboarding-authorizations", body)
        assert r.status_code == 400, (body, r.text)
        assert r.json()["error"]["details"]["field"] == field
    r = t.post("/v1/onboarding-authorizations", {"service_user_id": "x"}, idem=None)
    assert r.json()["error"]["code"] == "idempotency_key_required"
    narrow = make_tenant(stack, scopes=["customers:write"])
    r = narrow.post("/v1/onboarding-authorizations", {"service_user_id": "x"})
    assert r.status_code == 403 and r.json()["error"]["details"]["scope"] == "onboarding:write"


def test_branded_signup_in_a_real_browser(stack: Stack, browser: Browser) -> None:
    t = _branded(stack, app_name=HOSTILE)
    link = _link(t, email="grace@example.com", account_type="individual")
    url = _local(stack, link["url"])
    dialogs: list[str] = []
    violations: list[str] = []
    context = browser.new_context(viewport={"width": 900, "height": 900})
    page = context.new_page()
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
    page.route(
        "https://cdn.acme.example/**",
        lambda route: route.fulfill(status=200, body=LOGO_SVG, content_type="image/svg+xml"),
    )
    try:
        resp = page.goto(url)
        assert resp is not None and resp.status == 200
        csp = resp.headers["content-security-policy"]
        assert "script-src 'none'" in csp and "frame-ancestors 'none'" in csp
        assert page.inner_text("#app-name") == HOSTILE  # shown as text, never run
        assert page.title() == HOSTILE
        assert page.locator("script").count() == 0
        assert page.input_value("#email") == "grace@example.com"
        primary = page.eval_on_selector("header", "e => getComputedStyle(e).backgroundColor")
        assert primary == "rgb(91, 42, 134)"  # #5B2A86: the approved branding applies
        assert page.eval_on_selector("header img", "e => e.naturalWidth") == 120
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "onboarding-branded.png"), full_page=True)
        page.reload()  # viewing does not consume the link
        page.fill("#full_name", "Grace Hopper")
        page.fill("#country_code", "us")
        with page.expect_navigation():
            page.click("#submit")
        assert page.inner_text("h2") == "Your account has been created"
        customer_id = page.inner_text("#reference")
        assert customer_id.startswith("cus_")
        page.screenshot(path=str(ARTIFACTS / "onboarding-done.png"), full_page=True)
        resp = page.goto(url)  # the same link again
        assert resp is not None and resp.status == 410
        assert "already used" in page.inner_text("#message")
        assert dialogs == [] and violations == []
    finally:
        context.close()
    rows = db(stack, "SELECT * FROM ledger.customers WHERE id = $1", customer_id)
    assert len(rows) == 1
    assert rows[0]["tenant_id"] == t.tenant_id and rows[0]["mode"] == "sandbox"
    assert rows[0]["country_code"] == "US" and rows[0]["full_name"] == "Grace Hopper"
    auth = db(
        stack, "SELECT * FROM gateway.onboarding_authorizations WHERE id = $1", link["authorization_id"]
    )[0]
    assert auth["used_at"] is not None and auth["customer_id"] == customer_id
    assert auth["pending_command"] is None
    created = events_for(stack, {"customer_id": customer_id})
    assert [e["type"] for e in created] == ["customer.created"]
    r = httpx.post(url, data=_form())
    assert r.status_code == 410


def test_redirect_after_signup_in_a_real_browser(stack: Stack, browser: Browser) -> None:
    t = make_tenant(stack)
    target = stack.gateways[1].url + "/healthz?from=onboarding"  # another origin than the page
    link = _link(t, redirect_url=target)
    context = browser.new_context()
    page = context.new_page()
    try:
        page.goto(_local(stack, link["url"]))
        assert page.inner_text("#app-name") == "Account signup"  # no branding: the default look
        assert page.locator("header img").count() == 0
        assert page.locator("#account_type").count() == 1  # the link left the type open
        page.select_option("#account_type", "business")
        page.fill("#company_name", "Analytical Engines Ltd")
        page.fill("#email", "ops@engines.example")
        page.fill("#country_code", "GB")
        with page.expect_navigation(url=lambda u: u.startswith(stack.gateways[1].url)):
            page.click("#submit")
        query = parse_qs(urlsplit(page.url).query)
        assert query["from"] == ["onboarding"]
        assert query["authorization_id"] == [link["authorization_id"]]
        customer_id = query["customer_id"][0]
        assert '"status":"ok"' in page.content().replace(" ", "")
    finally:
        context.close()
    row = db(stack, "SELECT * FROM ledger.customers WHERE id = $1", customer_id)[0]
    assert row["account_type"] == "business" and row["company_name"] == "Analytical Engines Ltd"


def test_restricted_country_is_refused_on_the_page_and_keeps_the_link(stack: Stack) -> None:
    t = _branded(stack)
    link = _link(t, account_type="individual")
    url = _local(stack, link["url"])
    r = httpx.post(url, data=_form(country_code="JP"))
    assert r.status_code == 403
    assert "We cannot open this account" in r.text and "JP" in r.text
    assert 'value="Grace Hopper"' in r.text  # what the user typed stays in the form
    assert httpx.get(url).status_code == 200  # not consumed
    r = httpx.post(url, data=_form(full_name=""))
    assert r.status_code == 400 and "Please enter your full name." in r.text
    r = httpx.post(url, data=_form(country_code="U1"))
    assert r.status_code == 400 and "country code" in r.text
    r = httpx.post(url, data=_form())
    assert r.status_code == 201, r.text
    assert (
        db(stack, "SELECT count(*) AS n FROM ledger.customers WHERE tenant_id = $1", t.tenant_id)[0]["n"] == 1
    )
    assert httpx.get(url).status_code == 410


def test_tampered_expired_and_foreign_tokens_are_410(stack: Stack) -> None:
    t = make_tenant(stack)
    link = _link(t)
    url = _local(stack, link["url"])
    token = urlsplit(url).path.rsplit("/", 1)[1]
    head, payload, sig = token.split(".")
    forged = f"{head}.{payload}.{sig[:-2]}{'AA' if sig[-2:] != 'AA' else 'BB'}"
    settings = stack.settings()
    expired = sign(settings, link["authorization_id"], datetime.now(UTC) - timedelta(seconds=5))
    unknown = sign(settings, "onb_unknown", datetime.now(UTC) + timedelta(minutes=5))
    other_key = sign(
        Settings(onboarding_secret="someone-else-" * 4),
        link["authorization_id"],
        datetime.now(UTC) + timedelta(minutes=5),
    )
    access = admin_ok(
        stack, "issue_access_token", tenant_id=t.tenant_id, mode="sandbox", scopes=["onboarding:write"]
    )["access_token"]
    for bad in (forged, expired, unknown, other_key, access, "x" * 2000, "not-a-token"):
        page = stack.gateway + "/onboarding/" + bad
        g = httpx.get(page)
        assert g.status_code == 410, bad
        assert "text/html" in g.headers["content-type"]
        assert "script-src 'none'" in g.headers["content-security-policy"]
        assert httpx.post(page, data=_form()).status_code == 410
    assert httpx.get(url).status_code == 200  # the genuine link still works


def test_branding_shows_only_when_approved_and_valid(stack: Stack) -> None:
    t = _branded(stack, app_name="Approved Brand")
    url = _local(stack, _link(t)["url"])
    assert "Approved Brand" in httpx.get(url).text
    # Written behind the operators' back: not approved, so the default look.
    db(stack, "UPDATE identity.tenants SET branding_approved_at = NULL WHERE id = $1::uuid", t.tenant_id)
    assert "Approved Brand" not in httpx.get(url).text
    # Approved once, but no longer valid (a lowercase colour): the default look too.
    db(
        stack,
        "UPDATE identity.tenants SET branding_approved_at = now(), metadata = jsonb_set(metadata,"
        " '{white_label,primary_color}', '\"#5b2a86\"') WHERE id = $1::uuid",
        t.tenant_id,
    )
    html = httpx.get(url).text
    assert "Approved Brand" not in html and "Account signup" in html


def test_concurrent_submits_create_exactly_one_customer(stack: Stack) -> None:
    t = make_tenant(stack)
    url = _local(stack, _link(t, account_type="individual")["url"])

    async def burst() -> list[int]:
        async with httpx.AsyncClient(timeout=30) as client:
            rs = await asyncio.gather(*(client.post(url, data=_form()) for _ in range(4)))
        return [r.status_code for r in rs]

    statuses = run_async(burst())
    assert statuses.count(201) == 1, statuses
    assert set(statuses) <= {201, 410, 503}, statuses
    assert (
        db(stack, "SELECT count(*) AS n FROM ledger.customers WHERE tenant_id = $1", t.tenant_id)[0]["n"] == 1
    )
    assert httpx.get(url).status_code == 410


def test_an_unanswered_attempt_is_resent_never_duplicated(stack: Stack) -> None:
    t = make_tenant(stack)
    link = _link(t, account_type="individual")
    url = _local(stack, link["url"])
    row = db(
        stack, "SELECT * FROM gateway.onboarding_authorizations WHERE id = $1", link["authorization_id"]
    )[0]
    lost = CreateCustomer(
        command_id=new_id("cmd"),
        ctx=Ctx(request_id="req_lost", tenant_id=t.tenant_id, mode="sandbox", reply_to="sluice.replies.gone"),
        customer_id=new_id("cus"),
        account_type="individual",
        email="lost@example.com",
        country_code="US",
        service_user_id=row["service_user_id"],
        full_name="Lost Attempt",
        onboarding_authorization_id=link["authorization_id"],
    )
    # As if a gateway had sent it and died before the answer: claimed an hour ago.
    db(
        stack,
        "UPDATE gateway.onboarding_authorizations SET pending_command = $2,"
        " pending_at = now() - interval '1 hour' WHERE id = $1",
        link["authorization_id"],
        encode(lost),
    )
    assert httpx.get(url).status_code == 200  # still viewable
    r = httpx.post(url, data=_form(full_name="Second Try"))
    assert r.status_code == 201, r.text
    assert lost.customer_id in r.text
    rows = db(stack, "SELECT * FROM ledger.customers WHERE tenant_id = $1", t.tenant_id)
    assert [(c["id"], c["full_name"]) for c in rows] == [(lost.customer_id, "Lost Attempt")]


def test_public_pages_are_rate_limited_per_client_ip(stack: Stack, proxied_gateway: Proc) -> None:
    """No API key guards the signup pages, so each client IP gets a shared per-minute window
    (X-Forwarded-For is believed only from a trusted proxy: here the loopback-trusting gateway)."""
    limit = 200
    flooder = {"X-Forwarded-For": f"198.51.100.{uuid.uuid4().int % 250 + 1}"}
    now = datetime.now(UTC)
    if now.second > 50:  # keep the burst inside one fixed window
        import time

        time.sleep(61 - now.second)
    clients = [httpx.Client(base_url=proxied_gateway.url, timeout=30) for _ in range(2)]
    try:
        statuses = [
            clients[i % 2].get(f"/onboarding/not-a-token-{i}", headers=flooder).status_code
            for i in range(limit)
        ]
        assert 429 not in statuses and set(statuses) == {410}
        refused = clients[1].post("/onboarding/not-a-token", headers=flooder, data={"email": "a@b.co"})
        assert refused.status_code == 429
        assert 1 <= int(refused.headers["retry-after"]) <= 60
        assert "Too many attempts" in refused.text and "<script" not in refused.text
        other = {"X-Forwarded-For": "203.0.113.9"}
        assert clients[0].get("/onboarding/not-a-token", headers=other).status_code == 410
    finally:
        for c in clients:
            c.close()

"""The gateway's reference page renders every operation in headless Chromium with the network
cut off beyond the gateway: Redoc from the pinned build the gateway serves, a CSP
that names no other origin, no request leaving the gateway's origin."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Browser, Route, sync_playwright

from tests.conftest import ARTIFACTS, Stack
from tests.support.browser import CHROMIUM, CHROMIUM_ARGS, REFUSED_BY_DESIGN

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


def test_docs_render_every_operation_with_nothing_but_the_gateway(stack: Stack, browser: Browser) -> None:
    gateway = stack.gateway
    doc = httpx.get(gateway + "/schema/openapi.json", timeout=10).json()
    operations = {op["operationId"] for ops in doc["paths"].values() for op in ops.values()}
    network: list[str] = []
    errors: list[str] = []
    context = browser.new_context(viewport={"width": 1280, "height": 900})

    def only_the_gateway(route: Route) -> None:  # the network beyond the gateway is cut off
        network.append(route.request.url)
        if route.request.url.startswith(gateway + "/"):
            route.continue_()
        else:
            route.abort("internetdisconnected")

    context.route("**/*", only_the_gateway)
    page = context.new_page()
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        resp = page.goto(gateway + "/docs")
        assert resp is not None and resp.status == 200
        policy = resp.headers["content-security-policy"]
        sources = {s for directive in policy.split(";") for s in directive.split()[1:]}
        foreign = {
            s
            for s in sources
            if not re.fullmatch(r"'(self|none|unsafe-hashes|nonce-[\w-]+|sha256-[\w+/=]+)'|data:|blob:", s)
        }
        assert foreign == set(), policy
        assert "script-src 'self';" in policy and "default-src 'self'" in policy
        page.wait_for_selector("[data-section-id^='operation/']", timeout=60_000)
        rendered = page.eval_on_selector_all(
            "[data-section-id^='operation/']", "els => els.map(e => e.getAttribute('data-section-id'))"
        )
        assert {r.removeprefix("operation/") for r in rendered} == operations
        assert page.inner_text("h1").startswith("Sluice Partner Payments API")
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "docs-offline.png"))
    finally:
        context.close()
    assert network and all(u.startswith(gateway + "/") for u in network), network
    assert any("/docs/assets/redoc-" in u for u in network)
    unexpected = [e for e in errors if REFUSED_BY_DESIGN not in e]
    assert unexpected == [], unexpected  # no CSP refusal but the logo's, no script error


def test_the_bundle_is_the_pinned_build_served_as_a_script(stack: Stack) -> None:
    from common.docs_page import bundle, bundle_path, manifest

    page = httpx.get(stack.gateway + "/docs", timeout=10)
    assert bundle_path() in page.text and "https://" not in page.text
    served = httpx.get(stack.gateway + bundle_path(), timeout=30)
    assert served.status_code == 200 and served.content == bundle()
    assert served.headers["content-type"].startswith("text/javascript")
    assert served.headers["x-content-type-options"] == "nosniff"
    assert manifest()["package"] == "redoc" and manifest()["integrity"].startswith("sha512-")
    policies = [
        httpx.get(stack.gateway + "/docs", timeout=10).headers["content-security-policy"] for _ in "ab"
    ]
    nonces = {re.findall(r"'nonce-([\w-]+)'", p)[0] for p in policies}
    assert len(nonces) == 2  # fresh on every answer
    admin = httpx.get(stack.admin + "/docs", timeout=10)
    assert admin.status_code == 200 and "default-src 'self'" in admin.headers["content-security-policy"]

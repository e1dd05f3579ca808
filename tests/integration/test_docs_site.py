"""The documentation site: built from docs/ in strict mode, served from a local
directory, read in headless Chromium with every request beyond the site refused. Every page
of the nav renders (its title, a heading and text in the main column, no console error); the
built-in search finds the idempotency guide; the API reference renders every operation of
the gateway's document from the site alone, each with its Python, TypeScript and curl
samples, and every schema; and a broken link fails the build. The same opened from disk
(file://, no server): the nav's links open pages, search finds, the reference renders."""

from __future__ import annotations

import functools
import json
import socket
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from urllib.request import url2pathname

import pytest
import yaml
from playwright.sync_api import (
    Browser,
    BrowserContext,
    Page,
    ProxySettings,
    Request,
    Route,
    ViewportSize,
    sync_playwright,
)

from tests.conftest import ARTIFACTS
from tests.support.browser import CHROMIUM, CHROMIUM_ARGS, REFUSED_BY_DESIGN
from tests.support.docs_site import CONFIG, ROOT, build

pytestmark = [pytest.mark.integration, pytest.mark.long]


def nav_pages() -> list[tuple[str, str]]:
    """(title, URL path) of every page in mkdocs.yml's nav: page.html, as MkDocs makes them
    without directory URLs (use_directory_urls: false, so the site opens from disk)."""
    pages: list[tuple[str, str]] = []

    def walk(items: list[Any]) -> None:
        for item in items:
            ((title, target),) = item.items()
            if isinstance(target, list):
                walk(target)
            else:
                pages.append((title, target.removesuffix(".md") + ".html"))

    walk(yaml.safe_load(CONFIG.read_text())["nav"])
    return pages


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        return None


@pytest.fixture(scope="module")
def built(docs_site: Path) -> Path:
    """The session's strict build of the site (tests/conftest.py)."""
    return docs_site


@pytest.fixture(scope="module")
def site(built: Path) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(built)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def nowhere() -> Iterator[str]:
    """A proxy address that refuses every connection: a port bound here and never listened on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


class Offline:
    """A browser context in which only the site's origin answers; every request is recorded and
    every console error and page error kept.

    Each request is intercepted (``route``) and refused unless it is the site's, which turns
    the browser's cache off: every page fetches and compiles the theme's scripts and the search
    index again. A walk over many pages passes ``nowhere`` instead: everything beyond the
    site's host goes to a proxy that refuses it, and requests are recorded as the browser makes
    them (its ``request`` events, the search worker's included), with the cache on. Then what
    a page's own policy refused before sending it (failed for ``csp``) and the page's own
    ``blob:`` objects never reached the network and do not count as leaving the site."""

    def __init__(self, browser: Browser, origin: str, nowhere: str | None = None) -> None:
        self.origin = origin
        self.requests: list[str] = []
        self.unsent: set[str] = set()
        self.errors: list[str] = []
        viewport: ViewportSize = {"width": 1400, "height": 900}
        if nowhere is None:
            self.context: BrowserContext = browser.new_context(viewport=viewport)
            self.context.route("**/*", self._only_the_site)
            return
        proxy: ProxySettings = {"server": nowhere, "bypass": urlsplit(origin).hostname or ""}
        self.context = browser.new_context(viewport=viewport, proxy=proxy)
        self.context.on("request", lambda request: self.requests.append(request.url))
        self.context.on("requestfailed", self._failed)

    def _only_the_site(self, route: Route) -> None:
        self.requests.append(route.request.url)
        if route.request.url.startswith(self.origin):
            route.continue_()
        else:
            route.abort("internetdisconnected")

    def _failed(self, request: Request) -> None:
        if request.failure in ("csp", "net::ERR_BLOCKED_BY_CSP"):  # Chromium's reason, as Playwright says it
            self.unsent.add(request.url)

    def page(self) -> Page:
        page = self.context.new_page()
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        return page

    def foreign(self) -> list[str]:
        local = (self.origin, "blob:" + self.origin)
        return [u for u in self.requests if not u.startswith(local) and u not in self.unsent]


def test_every_nav_page_renders_with_nothing_but_the_site(site: str, browser: Browser, nowhere: str) -> None:
    offline = Offline(browser, site, nowhere)
    page = offline.page()
    pages = nav_pages()
    assert len(pages) >= 20 and ("Idempotency and retries", "guides/idempotency.html") in pages
    try:
        for title, path in pages:
            resp = page.goto(site + path)
            assert resp is not None and resp.status == 200, path
            assert page.title() == ("Sluice" if path == "index.html" else f"{title} - Sluice"), path
            main = page.locator("article.md-content__inner")
            assert main.locator("h1").count() == 1, path
            assert len(main.inner_text()) > 200, f"{path} has almost no content"
    finally:
        offline.context.close()
    assert offline.errors == []
    assert offline.foreign() == []  # no web font, no CDN script, nothing from another origin


def test_search_finds_the_idempotency_guide(site: str, browser: Browser) -> None:
    offline = Offline(browser, site)
    page = offline.page()
    try:
        page.goto(site)
        search = page.locator("input.md-search__input")
        search.click()
        search.press_sequentially("idempotency", delay=20)  # typed: the search listens to keys
        page.wait_for_selector(".md-search-result__item", timeout=30_000)
        links = page.eval_on_selector_all(
            ".md-search-result__item a", "els => els.map(e => e.getAttribute('href'))"
        )
        assert any("guides/idempotency.html" in (href or "") for href in links), links
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "docs-site-search.png"))
    finally:
        offline.context.close()
    assert offline.errors == []
    assert offline.foreign() == []
    assert any("search_index.json" in u for u in offline.requests)  # the site's own index


def check_reference(page: Page) -> None:
    """The reference page as Redoc rendered it: every operation of the gateway's document, each
    with a Python, a TypeScript and a curl sample; every schema under its own entry; the
    document's title; a link back to the guides."""
    doc = json.loads((ROOT / "clients" / "openapi.json").read_text())
    operations = {op["operationId"] for ops in doc["paths"].values() for op in ops.values()}
    page.wait_for_selector("[data-section-id^='operation/']", timeout=60_000)
    tabs = page.eval_on_selector_all(
        "[data-section-id^='operation/']",
        """els => Object.fromEntries(els.map(e => [e.getAttribute('data-section-id').slice(10),
              [...e.querySelectorAll('[role=tab]')].map(t => t.textContent)]))""",
    )
    assert set(tabs) == operations
    assert [op for op, names in tabs.items() if not {"Python", "TypeScript", "curl"} <= set(names)] == []
    schemas = page.eval_on_selector_all(
        "[data-section-id^='tag/schema-']", "els => els.map(e => e.getAttribute('data-section-id').slice(11))"
    )
    assert set(schemas) == set(doc["components"]["schemas"])
    assert page.inner_text("h1").startswith("Sluice Partner Payments API")
    assert page.locator("a[href='../index.html']").count() >= 1  # back to the documentation


def test_the_api_reference_renders_every_operation_from_the_site(site: str, browser: Browser) -> None:
    offline = Offline(browser, site)
    page = offline.page()
    try:
        page.goto(site + "reference/index.html")
        page.click("text=Open the API reference")
        check_reference(page)
    finally:
        offline.context.close()
    assert offline.foreign() == []
    assert any("/reference/assets/redoc-" in u for u in offline.requests)
    # the page's policy refuses Redoc's logo from its CDN before it is asked for
    assert [e for e in offline.errors if REFUSED_BY_DESIGN not in e] == []


def test_the_site_opened_from_disk_links_searches_and_renders_the_reference(
    built: Path, browser: Browser
) -> None:
    """No server: the site's files opened in Chromium (file://), every request to the network
    refused. Each link of the nav names a page's file (not a directory, which file:// would
    list), search finds the idempotency guide, and the API reference renders with its samples.
    Every page's rendering, with its scripts and without a foreign request, is the test above's:
    here the links are checked on disk, not rendered a second time (Chromium is about a CPU
    second a page)."""
    network: list[str] = []
    errors: list[str] = []
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.route("http*://**/*", lambda route: (network.append(route.request.url), route.abort()))
    page = context.new_page()
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto((built / "index.html").as_uri())
        links = page.eval_on_selector_all(
            "nav.md-nav--primary a.md-nav__link[href]", "els => els.map(e => e.href)"
        )
        pages = {href.split("#")[0] for href in links if href.startswith("file://")}
        assert len(pages) >= len(nav_pages()) - 1, links  # the home page links to itself as ./
        for href in sorted(pages):
            target = Path(url2pathname(urlsplit(href).path))
            assert target.is_file() and target.suffix == ".html", f"{href}: not a page"
            html = target.read_text()
            assert html.count("<h1") == 1 and "Sluice</title>" in html, f"{href}: not a page"
        page.goto((built / "index.html").as_uri())
        search = page.locator("input.md-search__input")
        search.click()
        search.press_sequentially("idempotency", delay=20)
        page.wait_for_selector(".md-search-result__item", timeout=30_000)
        found = page.eval_on_selector_all(".md-search-result__item a", "els => els.map(e => e.href)")
        assert any(h.startswith("file://") and "guides/idempotency.html" in h for h in found), found
        page.goto((built / "reference" / "index.html").as_uri())
        page.click("text=Open the API reference")
        check_reference(page)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "docs-site-from-disk-reference.png"))
    finally:
        context.close()
    assert network == []
    assert [e for e in errors if REFUSED_BY_DESIGN not in e] == []


def test_a_broken_link_fails_the_strict_build(tmp_path: Path) -> None:
    """mkdocs.yml as it is (strict, its link validation, theme, plugins, hooks), on a docs
    directory of one guide with a link to a page that is not there: the build fails, and the
    one warning it fails on names that link. One page, not the whole site copied: the check is
    the configuration's, and the session's build of the site passes on the same one."""
    guide = tmp_path / "docs" / "guides" / "idempotency.md"
    guide.parent.mkdir(parents=True)
    guide.write_text("# Idempotency and retries\n\nSee [the retired page](retired.md).\n")
    config = yaml.safe_load(CONFIG.read_text())
    config["docs_dir"] = str(tmp_path / "docs")
    config["nav"] = [{"Idempotency and retries": "guides/idempotency.md"}]
    config["hooks"] = [str(ROOT / h) for h in config["hooks"]]
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config))
    done = build(tmp_path / "site", tmp_path / "mkdocs.yml")
    assert done.returncode != 0
    said = done.stdout + done.stderr
    warnings = [line for line in said.splitlines() if line.startswith("WARNING")]
    assert len(warnings) == 1 and "'retired.md'" in warnings[0], said
    assert "Aborted with 1 warnings in strict mode" in said, said

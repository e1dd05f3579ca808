"""The documentation site: built from docs/ in strict mode, served from a local
directory, read in headless Chromium with every request beyond the site refused. Every page
of the nav renders (its title, a heading and text in the main column, no console error); the
built-in search finds the idempotency guide; the API reference renders every operation of
the gateway's document from the site alone; and a broken link fails the build."""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from playwright.sync_api import Browser, BrowserContext, Page, Route, sync_playwright

from tests.conftest import ARTIFACTS
from tests.support.browser import CHROMIUM, CHROMIUM_ARGS, REFUSED_BY_DESIGN

pytestmark = [pytest.mark.integration, pytest.mark.long]
ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "mkdocs.yml"


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    cmd = [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)


def nav_pages() -> list[tuple[str, str]]:
    """(title, URL path) of every page in mkdocs.yml's nav, directory URLs as MkDocs makes them."""
    pages: list[tuple[str, str]] = []

    def walk(items: list[Any]) -> None:
        for item in items:
            ((title, target),) = item.items()
            if isinstance(target, list):
                walk(target)
            else:
                path = target.removesuffix(".md")
                path = "" if path == "index" else path.removesuffix("/index").removesuffix("index") + "/"
                pages.append((title, path))

    walk(yaml.safe_load(CONFIG.read_text())["nav"])
    return pages


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        return None


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    out = tmp_path_factory.mktemp("site")
    done = build(CONFIG, out)
    assert done.returncode == 0, done.stdout + done.stderr
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(out)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


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
    every console error and page error kept."""

    def __init__(self, browser: Browser, origin: str) -> None:
        self.origin = origin
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.context: BrowserContext = browser.new_context(viewport={"width": 1400, "height": 900})
        self.context.route("**/*", self._only_the_site)

    def _only_the_site(self, route: Route) -> None:
        self.requests.append(route.request.url)
        if route.request.url.startswith(self.origin):
            route.continue_()
        else:
            route.abort("internetdisconnected")

    def page(self) -> Page:
        page = self.context.new_page()
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        return page

    def foreign(self) -> list[str]:
        return [u for u in self.requests if not u.startswith(self.origin)]


def test_every_nav_page_renders_with_nothing_but_the_site(site: str, browser: Browser) -> None:
    offline = Offline(browser, site)
    page = offline.page()
    pages = nav_pages()
    assert len(pages) >= 20 and ("Idempotency and retries", "guides/idempotency/") in pages
    try:
        for title, path in pages:
            resp = page.goto(site + path)
            assert resp is not None and resp.status == 200, path
            assert page.title() == ("Sluice" if path == "" else f"{title} - Sluice"), path
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
        assert any("guides/idempotency/" in (href or "") for href in links), links
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "docs-site-search.png"))
    finally:
        offline.context.close()
    assert offline.errors == []
    assert offline.foreign() == []
    assert any("search_index.json" in u for u in offline.requests)  # the site's own index


def test_the_api_reference_renders_every_operation_from_the_site(site: str, browser: Browser) -> None:
    doc = json.loads((ROOT / "clients" / "openapi.json").read_text())
    operations = {op["operationId"] for ops in doc["paths"].values() for op in ops.values()}
    offline = Offline(browser, site)
    page = offline.page()
    try:
        page.goto(site + "reference/")
        page.click("text=Open the API reference")
        page.wait_for_selector("[data-section-id^='operation/']", timeout=60_000)
        rendered = page.eval_on_selector_all(
            "[data-section-id^='operation/']", "els => els.map(e => e.getAttribute('data-section-id'))"
        )
        assert {r.removeprefix("operation/") for r in rendered} == operations
        assert page.inner_text("h1").startswith("Sluice Partner Payments API")
    finally:
        offline.context.close()
    assert offline.foreign() == []
    assert any("/reference/assets/redoc-" in u for u in offline.requests)
    # the page's policy refuses Redoc's logo from its CDN before it is asked for
    assert [e for e in offline.errors if REFUSED_BY_DESIGN not in e] == []


def test_a_broken_link_fails_the_strict_build(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(ROOT / "docs", docs)
    guide = docs / "guides" / "idempotency.md"
    guide.write_text(guide.read_text() + "\nSee [the retired page](retired.md).\n")
    config = yaml.safe_load(CONFIG.read_text())
    config["docs_dir"] = str(docs)
    config["hooks"] = [str(ROOT / h) for h in config["hooks"]]
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config))
    done = build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0
    assert "retired.md" in done.stdout + done.stderr

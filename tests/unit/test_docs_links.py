"""The documentation site as built (``mkdocs build``), read the way a browser opened on the
files reads it: every link and every script, style or image a page names resolves to a file
inside the built site (never a directory, which from disk is a listing; never an absolute path,
which from disk is the machine's root; never a ``.md`` source); a link to another web site is
a citation and allowed. And the pages written for partners (the home page, the quickstart,
the guides, the SDK pages, the API reference, the changelog) name nothing of the repository:
no file or folder outside docs/, no spec or decision record, no README, no issue number.
The install page's versions are the packages' own."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[2]

PARTNER_PAGES = ("index.html", "quickstart.html", "changelog.html", "guides/", "sdks/", "reference/")
# What names the repository rather than the site: its top-level folders and files (docs/ is
# the site), the spec and decision records beside it, an issue or a contract section.
REPOSITORY = re.compile(
    r"(?<![\w.~-])(?:\.\./)*(?:services|libs|tools|tests|clients|deploy|shared/spec)/"
    r"|\.\./shared\b|\bREADME\.md\b|\bMakefile\b|\bpyproject\.toml\b|\bmkdocs\.yml\b"
    r"|\b[Cc]ontract \d+(?:\.\d+)?\b|\b[Ii]ssue \d+\b"
)


class _Page(HTMLParser):
    """The URLs a page names (href, src) and the text of its article."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []
        self.text: list[str] = []
        self._article = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "article":
            self._article += 1
        self.urls += [v for k, v in attrs if k in ("href", "src") and v]

    def handle_endtag(self, tag: str) -> None:
        if tag == "article":
            self._article -= 1

    def handle_data(self, data: str) -> None:
        if self._article:
            self.text.append(data)


@pytest.fixture
def site(docs_site: Path) -> Path:
    """The session's strict build of the site (tests/conftest.py)."""
    return docs_site


@functools.cache
def _parsed(path: Path, modified_ns: int) -> _Page:
    """A page as parsed: each file read once a session (again only once it changed)."""
    parsed = _Page()
    parsed.feed(path.read_text(encoding="utf-8"))
    return parsed


def pages(site: Path) -> Iterator[tuple[str, _Page]]:
    for path in sorted(site.rglob("*.html")):
        name = path.relative_to(site).as_posix()
        if name == "404.html":  # served by a web server at any depth: its links are absolute
            continue
        yield name, _parsed(path, path.stat().st_mtime_ns)


def broken_links(site: Path) -> list[str]:
    """Every URL of every page that does not open a file of the site from disk."""
    broken: list[str] = []
    for name, page in pages(site):
        for url in page.urls:
            parts = urlsplit(url)
            if parts.scheme in ("http", "https", "mailto") and parts.netloc != "":
                continue  # another web site: a citation
            if parts.scheme in ("data", "blob", "javascript") or (not parts.path and not parts.scheme):
                continue  # inline data, or an anchor on the same page
            if parts.scheme or parts.netloc or parts.path.startswith("/"):
                broken.append(f"{name}: {url} (absolute: from disk it is the machine's, not the site's)")
                continue
            target = ((site / name).parent / unquote(parts.path)).resolve()
            if not target.is_relative_to(site.resolve()):
                broken.append(f"{name}: {url} leaves the site")
            elif REPOSITORY.search(parts.path) and not target.exists():
                broken.append(f"{name}: {url} names a repository path")
            elif target.suffix == ".md":
                broken.append(f"{name}: {url} names a Markdown source")
            elif target.is_dir():
                broken.append(f"{name}: {url} is a directory (from disk, a listing)")
            elif not target.exists():
                broken.append(f"{name}: {url} names no file of the site")
    return broken


def test_every_link_of_the_built_site_opens_a_file_of_the_site(site: Path) -> None:
    assert (site / "index.html").exists() and (site / "guides" / "idempotency.html").exists()
    assert broken_links(site) == []


def test_a_link_out_of_the_site_or_into_the_repository_is_found(site: Path, tmp_path: Path) -> None:
    """The checker itself: a page that points at the spec beside the repository, a service's
    README, a directory and a Markdown source is refused on each."""
    bad = site / "guides" / "bad.html"
    bad.write_text(
        '<a href="../../shared/spec/contract.md">spec</a><a href="../services/gateway/README.md">gw</a>'
        '<a href="../sdks/">sdks</a><a href="/index.html">root</a><a href="https://example.com/x">ok</a>'
    )
    try:
        found = [line for line in broken_links(site) if line.startswith("guides/bad.html")]
    finally:
        bad.unlink()
    assert len(found) == 4, found
    assert "leaves the site" in found[0] and "repository path" in found[1]
    assert "directory" in found[2] and "absolute" in found[3]


def test_partner_pages_name_nothing_of_the_repository(site: Path) -> None:
    named = []
    partner = [(n, p) for n, p in pages(site) if n.startswith(PARTNER_PAGES) and n != "reference/api.html"]
    assert len(partner) >= 14, [n for n, _ in partner]
    for name, page in partner:
        text = "".join(page.text)
        named += [
            f"{name}: {m.group(0)!r} in ...{text[max(0, m.start() - 60) : m.end() + 20]}..."
            for m in REPOSITORY.finditer(text)
        ]
    assert named == [], "\n".join(named)


def test_the_install_page_gives_the_packages_own_versions(site: Path) -> None:
    python = re.search(
        r'__version__ = "([^"]+)"', (ROOT / "clients/python/sluice_sdk/_version.py").read_text()
    )
    assert python is not None
    typescript = json.loads((ROOT / "clients/typescript/package.json").read_text())["version"]
    api = json.loads((ROOT / "clients/openapi.json").read_text())["info"]["version"]
    install = (ROOT / "docs/sdks/install.md").read_text()
    assert f"| Python | `sluice-sdk` | {python.group(1)} |" in install
    assert f"| TypeScript / JavaScript | `@sluice/sdk` | {typescript} |" in install
    assert (
        f"sluice_sdk-{python.group(1)}-py3-none-any.whl" in install
        and f"sluice-sdk-{typescript}.tgz" in install
    )
    assert f"version {api} of the Partner Payments API" in install
    changelog = (ROOT / "docs/changelog.md").read_text()
    assert f"## API {api}, SDKs {python.group(1)}" in changelog and python.group(1) == typescript

"""The docs page's renderer is the pinned build: the vendored bundle's sha256 is
the manifest's, and the page and its policy name no other origin."""

from __future__ import annotations

import hashlib

import pytest

from common import docs_page

pytestmark = pytest.mark.unit


def test_the_vendored_bundle_is_the_pinned_one() -> None:
    pinned = docs_page.manifest()
    raw = (docs_page.STATIC / pinned["file"]).read_bytes()
    assert hashlib.sha256(raw).hexdigest() == pinned["sha256"]
    assert docs_page.bundle() == raw
    assert pinned["version"] in docs_page.bundle_path()


def test_the_page_loads_only_from_its_own_origin() -> None:
    html = docs_page.page("<Sluice>", "n0nce").decode()
    assert "&lt;Sluice&gt;" in html and "http" not in html
    assert html.count('nonce="n0nce"') == 3
    policy = docs_page.csp("n0nce")
    assert "http" not in policy and "'unsafe-inline'" not in policy and "'unsafe-eval'" not in policy
    assert "script-src 'self';" in policy and "frame-ancestors 'none'" in policy

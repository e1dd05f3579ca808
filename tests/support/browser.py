"""Headless Chromium as the browser tests drive it (the system's build, `make browser`), and
what they refuse: every request beyond the origin under test."""

from __future__ import annotations

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
# Redoc's sidebar footer asks for the Redocly logo from its CDN; the pages' policies refuse it,
# so the browser never sends that request (the tests assert it never reaches the network).
REFUSED_BY_DESIGN = "https://cdn.redoc.ly/redoc/logo-mini.svg"

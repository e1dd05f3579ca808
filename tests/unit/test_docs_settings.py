"""The documentation site's settings reference (docs/operations/settings.md) is
generated from common.settings when the site is built: every setting, its default, and the
comment the code carries above it; a secret's default is never shown."""

from __future__ import annotations

import pytest

from common.settings import Settings
from tools.codegen import docs_site

pytestmark = pytest.mark.unit


def rows() -> dict[str, list[str]]:
    table = docs_site.settings_reference().splitlines()[2:]
    cells = [[c.strip() for c in line.strip("|").split(" | ")] for line in table]
    return {c[0].strip("`"): c[1:] for c in cells}


def test_every_setting_is_listed_once_with_its_default() -> None:
    listed = rows()
    assert set(listed) == {f"SLUICE_{name.upper()}" for name in Settings.model_fields}
    assert listed["SLUICE_GATEWAY_METRICS_PORT"][0] == "`8010`"
    assert listed["SLUICE_ENV"][0] == "`production`"
    assert listed["SLUICE_ADMIN_TOKEN"][0] == "(none)"  # a secret: only whether there is one


def test_the_comment_above_a_setting_is_its_note() -> None:
    listed = rows()
    assert "off the partner port" in listed["SLUICE_GATEWAY_METRICS_HOST"][1]
    assert "3 on a real cluster" in listed["SLUICE_KAFKA_REPLICATION_FACTOR"][1]  # on its line


def test_the_page_holds_the_marker_the_hook_replaces() -> None:
    page = (docs_site.ROOT / "docs" / "operations" / "settings.md").read_text()
    assert docs_site.SETTINGS_MARKER in page
    rendered = docs_site.on_page_markdown(page, None, None, docs_site.Files([]))
    assert docs_site.SETTINGS_MARKER not in rendered and "| `SLUICE_KAFKA_MAX_RECORDS` | `200` |" in rendered

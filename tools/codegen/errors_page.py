"""The tables of the partners' errors guide (docs/guides/errors.md), generated from the server's
own tables in ``common.errors``: ``HTTP_STATUS`` and ``CODES`` (every code, its status, what it
means) and ``REASONS`` (every ``details.reason``, the code and status it travels with). The
services take a refusal's code from the same ``REASONS``, so the page cannot say one status while
the server answers another; tests/unit/test_errors_page_drift.py fails when the committed page
is stale.

    python -m tools.codegen.errors_page write   # rewrite the generated blocks in place
    python -m tools.codegen.errors_page check   # exit 1 when the page is stale
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "libs") not in sys.path:
    sys.path.insert(0, str(ROOT / "libs"))

from common.errors import CODES, HTTP_STATUS, REASONS  # noqa: E402

PAGE = ROOT / "docs" / "guides" / "errors.md"
BEGIN = "<!-- generated from libs/common/errors.py ({name}): python -m tools.codegen.errors_page write -->"
END = "<!-- end of generated {name} -->"


def codes_table() -> str:
    rows = ["| code | HTTP | meaning | retry? |", "|---|---|---|---|"]
    for code, row in sorted(CODES.items(), key=lambda item: (HTTP_STATUS[item[0]], item[0])):
        rows.append(f"| `{code}` | {HTTP_STATUS[code]} | {row.means} | {row.action} |")
    return "\n".join(rows)


def reasons_table() -> str:
    rows = ["| reason | HTTP | code | what it means | what to do |", "|---|---|---|---|---|"]
    for reason, row in sorted(REASONS.items(), key=lambda item: (HTTP_STATUS[item[1].code], item[0])):
        rows.append(f"| `{reason}` | {HTTP_STATUS[row.code]} | `{row.code}` | {row.means} | {row.action} |")
    return "\n".join(rows)


BLOCKS = {"codes": codes_table, "reasons": reasons_table}


def render(page: str) -> str:
    """``page`` with every generated block rewritten from the tables."""
    for name, table in BLOCKS.items():
        begin, end = BEGIN.format(name=name), END.format(name=name)
        pattern = re.compile(re.escape(begin) + r"\n(?:.*?\n)?" + re.escape(end), re.DOTALL)
        found = pattern.search(page)
        if found is None:
            raise LookupError(f"{PAGE.name} has no generated block {name!r}")
        page = page[: found.start()] + f"{begin}\n{table()}\n{end}" + page[found.end() :]
    return page


def main(argv: list[str]) -> int:
    current = PAGE.read_text()
    fresh = render(current)
    if argv[1:] == ["write"]:
        PAGE.write_text(fresh)
        return 0
    if argv[1:] == ["check"]:
        return 0 if fresh == current else 1
    print(__doc__)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))

"""The expand rule (docs/operations/upgrade.md, "Migrations: expand, then contract"): a release's
migrations only add, so that the previous release's pods run on the new schema while the
Deployments roll, and after a rollback of the image. What the previous release's code would
break on is refused in every upgrade of services/*/migrations/versions: dropping a table, a
column, a view or a schema; renaming anything; changing a column's type; making a column NOT
NULL, or adding a NOT NULL column without a default (the previous release's inserts do not set
it). Dropping and re-adding a CHECK constraint to widen it, an index, a function are allowed.

A step that does break the previous release (a contract step: removing what the code stopped
using a release before) is listed in the table of upgrade.md, service and revision, with why;
a migration listed there that no longer breaks anything is refused too, so the table stays
true. The check reads the migration modules' text (their SQL strings and alembic ``op`` calls),
the downgrade excepted, without importing them."""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
UPGRADE_PAGE = ROOT / "docs" / "operations" / "upgrade.md"
BREAKS = {
    "drops a table, column, view or schema": re.compile(r"\bDROP\s+(TABLE|COLUMN|VIEW|SCHEMA)\b", re.I),
    "renames": re.compile(r"\bRENAME\b", re.I),
    "changes a column's type": re.compile(r"\bALTER\s+COLUMN\s+\w+\s+(SET\s+DATA\s+)?TYPE\b", re.I),
    "makes a column NOT NULL": re.compile(r"\bSET\s+NOT\s+NULL\b", re.I),
}
ADD_COLUMN = re.compile(r"\bADD\s+COLUMN\b", re.I)
BREAKING_OPS = {"drop_table", "drop_column", "rename_table"}
# op.alter_column breaks the previous release when it renames, retypes or forbids NULL
BREAKING_ALTER = {"new_column_name", "type_", "nullable"}


def _downgrade_nodes(tree: ast.Module) -> set[int]:
    """The nodes of ``def downgrade`` and of every ``down=`` argument (sql_migration's)."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.FunctionDef) and node.name == "downgrade") or (
            isinstance(node, ast.keyword) and node.arg == "down"
        ):
            skip |= {id(n) for n in ast.walk(node)}
    if tree.body and isinstance(tree.body[0], ast.Expr):
        skip.add(id(tree.body[0].value))  # the docstring
    return skip


def _clauses(statement: str) -> list[str]:
    """An ALTER TABLE's clauses (``ADD COLUMN a ..., DROP COLUMN b``), split at commas outside
    parentheses."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(statement):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            out.append(statement[start:i])
            start = i + 1
    return [*out, statement[start:]]


def _sql_breaks(sql: str) -> list[str]:
    found = [why for why, rx in BREAKS.items() if rx.search(sql)]
    for clause in _clauses(sql):
        not_null = re.search(r"\bNOT\s+NULL\b", clause, re.I)
        if ADD_COLUMN.search(clause) and not_null and not re.search(r"\bDEFAULT\b", clause, re.I):
            found.append("adds a NOT NULL column without a default")
    return found


def _op_breaks(node: ast.AST) -> list[str]:
    """alembic's ``op`` calls that drop or rename, or alter a column so."""
    if isinstance(node, ast.Attribute) and node.attr in BREAKING_OPS:
        return [f"calls op.{node.attr}"]
    is_alter = isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "alter_column"
    if is_alter and {k.arg for k in node.keywords} & BREAKING_ALTER:  # type: ignore[attr-defined]
        return ["calls op.alter_column to rename, retype or forbid NULL"]
    return []


def breaks(source: str) -> list[str]:
    """What the upgrade of one migration module does that the previous release breaks on."""
    tree = ast.parse(source)
    skip = _downgrade_nodes(tree)
    found = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found += _sql_breaks(node.value)
        found += _op_breaks(node)
    return sorted(set(found))


def migrations() -> dict[tuple[str, str], Path]:
    out = {}
    for path in sorted(ROOT.glob("services/*/migrations/versions/*.py")):
        revision = re.search(r'^revision = "(\w+)"', path.read_text(), re.M)
        assert revision, path
        out[(path.parts[-4], revision.group(1))] = path
    return out


def contract_steps() -> set[tuple[str, str]]:
    """The rows of upgrade.md's contract table: | `service` | `revision` | why |."""
    return set(re.findall(r"^\| `(\w+)` \| `(\w+)` \|", UPGRADE_PAGE.read_text(), re.M))


def test_every_migration_only_adds_unless_it_is_a_listed_contract_step() -> None:
    found = {key: breaks(path.read_text()) for key, path in migrations().items()}
    steps = contract_steps()
    unlisted = {f"{s} {r}": why for (s, r), why in found.items() if why and (s, r) not in steps}
    assert not unlisted, (
        f"migrations the previous release breaks on, not contract steps of upgrade.md: {unlisted}"
    )
    stale = sorted(f"{s} {r}" for s, r in steps if not found.get((s, r)))
    assert not stale, f"upgrade.md lists contract steps that are no migration or break nothing: {stale}"


SYNTHETIC = '''
"""a release that renames a column in one step"""
from common.db import sql_migration
revision = "0099"
down_revision = "0098"
upgrade, downgrade = sql_migration(
    up=[{up!r}],
    down=["ALTER TABLE ledger.transfers DROP COLUMN note"],
)
'''


@pytest.mark.parametrize(
    ("up", "why"),
    [
        ("ALTER TABLE ledger.transfers DROP COLUMN memo", "drops a table, column, view or schema"),
        ("ALTER TABLE ledger.transfers RENAME COLUMN memo TO note", "renames"),
        ("ALTER TABLE ledger.transfers ALTER COLUMN memo TYPE BYTEA", "changes a column's type"),
        ("ALTER TABLE ledger.transfers ALTER COLUMN memo SET NOT NULL", "makes a column NOT NULL"),
        ("ALTER TABLE ledger.transfers ADD COLUMN a TEXT, ADD COLUMN note TEXT NOT NULL", "adds a NOT NULL"),
        ("DROP TABLE ledger.memos", "drops a table"),
    ],
)
def test_a_synthetic_contract_in_one_release_is_refused(up: str, why: str) -> None:
    found = breaks(SYNTHETIC.format(up=up))
    assert any(f.startswith(why) for f in found), found


def test_what_only_adds_passes() -> None:
    for up in (
        "ALTER TABLE ledger.transfers ADD COLUMN note TEXT",
        "ALTER TABLE ledger.transfers ADD COLUMN fee NUMERIC(38, 6) NOT NULL DEFAULT 0, ADD COLUMN b TEXT",
        "CREATE TABLE ledger.notes (id TEXT NOT NULL PRIMARY KEY)",
        "ALTER TABLE ledger.accounts DROP CONSTRAINT kinds, ADD CONSTRAINT kinds CHECK (kind IN ('a', 'b'))",
    ):
        assert breaks(SYNTHETIC.format(up=up)) == [], up  # the downgrade's DROP COLUMN is not read


def test_alembic_op_calls_in_an_upgrade_are_read() -> None:
    source = textwrap.dedent(
        """
        from alembic import op
        def upgrade():
            op.drop_column("transfers", "memo", schema="ledger")
            op.alter_column("transfers", "note", server_default="")
        def downgrade():
            op.drop_table("notes", schema="ledger")
        """
    )
    assert breaks(source) == ["calls op.drop_column"]

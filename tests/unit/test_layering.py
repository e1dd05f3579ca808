"""The suite's layering: no service imports another, libs/ imports no service, and nothing of
the product (libs/, services/) imports the development tooling (tools/); the layers run one way,
libs <- services <- tools, and no import cycle exists anywhere. Read from the source with
``ast``, so a lazy import inside a function counts too."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SERVICES = ("gateway", "ledger", "compliance", "webhooks", "admin")


def _imported_tops(path: Path) -> set[str]:
    tops: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            tops.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            tops.add(node.module.split(".")[0])
    return tops


def _offenders(folder: Path, forbidden: set[str]) -> list[str]:
    return sorted(
        f"{p.relative_to(ROOT)} imports {', '.join(sorted(_imported_tops(p) & forbidden))}"
        for p in folder.rglob("*.py")
        if _imported_tops(p) & forbidden
    )


@pytest.mark.unit
@pytest.mark.parametrize("service", SERVICES)
def test_no_service_imports_another(service: str) -> None:
    folder = ROOT / "services" / service
    assert any(folder.rglob("*.py"))
    assert _offenders(folder, set(SERVICES) - {service}) == []


@pytest.mark.unit
def test_common_imports_no_service() -> None:
    assert _offenders(ROOT / "libs" / "common", set(SERVICES)) == []


@pytest.mark.unit
def test_libs_holds_only_what_the_services_share() -> None:
    """libs/ is the product's shared code (common) and its command line (sluice); tooling lives
    in tools/."""
    assert {p.name for p in (ROOT / "libs").iterdir() if (p / "__init__.py").exists()} == {"common", "sluice"}


@pytest.mark.unit
@pytest.mark.parametrize("folder", ["libs", "services"])
def test_the_product_imports_no_tools(folder: str) -> None:
    """The image holds libs/ and services/ only: an import of tools there would fail in production."""
    assert _offenders(ROOT / folder, {"tools"}) == []


# tools/stack is the bottom of the tooling (the stores, the broker, the suite runner); the other
# folders each stand on it and on the product, never on each other.
TOOL_FOLDERS = ("bench", "chaos", "codegen", "mutate", "stack")


def _tool_imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        found.update(n.split(".")[1] for n in names if n.startswith("tools.") and n.count(".") >= 1)
    return found & set(TOOL_FOLDERS)


@pytest.mark.unit
@pytest.mark.parametrize("folder", TOOL_FOLDERS)
def test_each_tool_stands_on_the_stack_alone(folder: str) -> None:
    allowed = {folder} if folder == "stack" else {folder, "stack"}
    offenders = sorted(
        f"{p.relative_to(ROOT)} imports tools.{', tools.'.join(sorted(_tool_imports(p) - allowed))}"
        for p in (ROOT / "tools" / folder).rglob("*.py")
        if _tool_imports(p) - allowed
    )
    assert offenders == []


def module_name(root: Path, path: Path) -> str:
    """``libs/common/db.py`` -> ``common.db``, ``tools/stack/__init__.py`` -> ``tools.stack``."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[0] in ("libs", "services"):
        parts = parts[1:]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path, folders: tuple[str, ...]) -> dict[str, set[str]]:
    """Each module of ``folders`` (migrations aside) -> the modules of the tree it imports, at
    any depth of its code; ``from package import name`` counts the package and, when it is
    one, the module ``name``; relative imports resolved."""
    paths = [p for f in folders for p in (root / f).rglob("*.py") if "migrations" not in p.parts]
    modules = {module_name(root, p): p for p in paths}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        wanted: list[str] = []
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                wanted += [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, base] if base else up)
                wanted += [base, *(f"{base}.{a.name}" for a in node.names)]
        graph[name] = set()
        for target in wanted:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


@pytest.mark.unit
def test_no_import_cycle_anywhere() -> None:
    graph = import_graph(ROOT, ("libs", "services", "tools"))
    assert len(graph) > 200
    assert cycles(graph) == []


@pytest.mark.unit
def test_the_cycle_check_finds_a_cycle_through_a_lazy_import(tmp_path: Path) -> None:
    (tmp_path / "tools" / "stack").mkdir(parents=True)
    (tmp_path / "tools" / "__init__.py").write_text("")
    (tmp_path / "tools" / "stack" / "__init__.py").write_text("")
    (tmp_path / "tools" / "stack" / "a.py").write_text("from tools.stack import b\n")
    (tmp_path / "tools" / "stack" / "b.py").write_text("from . import c\n")
    (tmp_path / "tools" / "stack" / "c.py").write_text("def f():\n    from tools.stack.a import g\n")
    (tmp_path / "tools" / "stack" / "d.py").write_text("from tools.stack.a import g\n")
    assert cycles(import_graph(tmp_path, ("tools",))) == [["tools.stack.a", "tools.stack.b", "tools.stack.c"]]


@pytest.mark.unit
def test_the_tool_check_sees_a_tool_importing_another(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text("from tools.stack.suite import Suite\ndef f():\n    from tools import chaos\n")
    assert _tool_imports(f) == {"stack", "chaos"}


@pytest.mark.unit
def test_the_check_sees_imports_at_any_depth(tmp_path: Path) -> None:
    """The walk finds a lazy import inside a function (so the tests above can fail)."""
    f = tmp_path / "m.py"
    f.write_text("import os\n\ndef f():\n    from ledger.journal import post\n    import admin.app\n")
    assert _imported_tops(f) == {"os", "ledger", "admin"}


# ---- tables: no service names another's schema; identity is written by admin only ----

SCHEMA_OF = {
    "admin": "identity",
    "gateway": "gateway",
    "ledger": "ledger",
    "compliance": "compliance",
    "webhooks": "webhooks",
}
IDENTITY_TABLES = {"tenants", "api_keys"}  # common.identity: admin writes, the gateway reads
WRITES = {"insert", "update", "delete"}


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def table_offences(path: Path, own: str) -> list[str]:
    """Where ``path`` (a module of the service owning schema ``own``) names another service's
    schema in a string (SQL text, ``schema=``), or writes an identity table outside admin."""
    tree = ast.parse(path.read_text(), str(path))
    docs = _docstrings(tree)
    others = [s for s in SCHEMA_OF.values() if s != own]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            for other in others:
                if re.search(rf"\b{other}\.[a-z_]+\b", node.value):
                    found.append(f"{path.name}:{node.lineno} names schema {other}: {node.value[:60]!r}")
        if isinstance(node, ast.keyword) and node.arg == "schema" and isinstance(node.value, ast.Constant):
            named = node.value.value
            if named in others:
                found.append(f"{path.name}:{node.value.lineno} names schema {named}")
        if (
            own != "identity"
            and isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in WRITES
            and any(isinstance(a, ast.Name) and a.id in IDENTITY_TABLES for a in node.args)
        ):
            found.append(f"{path.name}:{node.lineno} writes identity.{node.args[0].id}")  # type: ignore[attr-defined]
    return found


@pytest.mark.unit
@pytest.mark.parametrize("service", SERVICES)
def test_no_service_names_another_services_tables(service: str) -> None:
    own = SCHEMA_OF[service]
    offences = [
        o
        for p in (ROOT / "services" / service).rglob("*.py")
        if "migrations" not in p.parts
        for o in table_offences(p, own)
    ]
    assert offences == []


# admin owns identity; the gateway authenticates from it; compliance and webhooks read whether
# a tenant is disabled (learned durably, from the source, by every service: docs/security.md)
IDENTITY_READERS = {"admin", "gateway", "compliance", "webhooks"}


def _imported_modules(path: Path) -> set[str]:
    mods: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            mods.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            mods.add(node.module)
            mods.update(f"{node.module}.{alias.name}" for alias in node.names)
    return mods


def identity_readers(services: Path) -> set[str]:
    """The services whose code imports ``common.identity`` (the identity tables' declaration)."""
    return {
        p.relative_to(services).parts[0]
        for p in services.rglob("*.py")
        if "common.identity" in _imported_modules(p)
    }


@pytest.mark.unit
def test_only_admin_and_the_gateway_read_the_identity_tables() -> None:
    assert identity_readers(ROOT / "services") <= IDENTITY_READERS


@pytest.mark.unit
def test_the_identity_check_finds_a_reader(tmp_path: Path) -> None:
    (tmp_path / "ledger").mkdir()
    (tmp_path / "ledger" / "a.py").write_text("def f():\n    from common import identity\n")
    (tmp_path / "webhooks").mkdir()
    (tmp_path / "webhooks" / "b.py").write_text("from common.identity import Tenant\n")
    (tmp_path / "compliance").mkdir()
    (tmp_path / "compliance" / "c.py").write_text("from common import money\n")
    assert identity_readers(tmp_path) == {"ledger", "webhooks"}


@pytest.mark.unit
def test_the_table_check_finds_a_private_view_a_raw_query_and_a_write(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text(
        '"""Reads ledger.accounts (a docstring: fine)."""\n'
        "from sqlalchemy import MetaData, insert, text\n"
        'view = MetaData(schema="identity")\n'
        'q = text("SELECT balance FROM ledger.accounts")\n'
        "stmt = insert(tenants)\n"
    )
    found = table_offences(f, "gateway")
    assert any("names schema identity" in o for o in found), found
    assert any("names schema ledger" in o for o in found), found
    assert any("writes identity.tenants" in o for o in found), found
    assert not any(":1 " in o for o in found), found


# ---- one publish scheme: every consumer emits through its outbox ----

EMITTING = ("ledger", "compliance", "webhooks")
# A command that finally failed is answered straight away (no transaction committed anything),
# and a dead letter is a copy of what could not be handled: only these publish directly. The
# journal's anchors (ledger.anchors) must not pass through the database they anchor: an outbox
# row could be deleted before it was relayed.
DIRECT_ALLOWED = {"answer_failure", "answer_undecided", "give_up", "anchor_moved", "publish_anchors"}


def _direct_publishes(path: Path) -> list[str]:
    """``publish``/``reply``/``broker.publish`` calls outside the allowed failure answers."""
    found: list[str] = []

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) else where
            if isinstance(child, ast.Call):
                f = child.func
                name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
                if name in {"publish", "reply", "publish_batch"} and where not in DIRECT_ALLOWED:
                    found.append(
                        f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name}:"
                        f"{child.lineno} {name} in {where}"
                    )
            visit(child, inner)

    visit(ast.parse(path.read_text(), str(path)), "<module>")
    return found


@pytest.mark.unit
@pytest.mark.parametrize("service", EMITTING)
def test_every_consumer_publishes_through_its_outbox(service: str) -> None:
    folder = ROOT / "services" / service
    assert [d for p in sorted(folder.rglob("*.py")) for d in _direct_publishes(p)] == []
    models = (folder / "models.py").read_text()
    assert "outbox = outbox_table(SCHEMA" in models, f"{service} declares no outbox table"
    app = (folder / "app.py").read_text()
    assert f'Outbox("{service}"' in app and '"outbox-relay"' in app, f"{service} runs no outbox relay"


@pytest.mark.unit
def test_the_publish_check_finds_a_direct_publish(tmp_path: Path) -> None:
    handlers = {
        "run_batch": "await publish(b, x)",  # a batch publishing around its outbox
        "answer_failure": "await reply(b, 't', r)",  # allowed: nothing was committed
        "other": "await self.broker.publish(x)",
    }
    f = tmp_path / "h.py"
    f.write_text("".join(f"async def {name}(self, b):\n    {body}\n\n" for name, body in handlers.items()))
    assert _direct_publishes(f) == ["h.py:2 publish in run_batch", "h.py:8 publish in other"]


# ---- the ledger's core: decisions that import no I/O ----

CORE = "ledger.core"
# The libraries that talk to a database, a cache or a broker: what the core must never reach.
IO_LIBRARIES = {"sqlalchemy", "sqlmodel", "asyncpg", "redis", "aiokafka", "faststream"}
# What a module of the core may import itself: the standard library, msgspec (the contracts'
# structs), the shared pure modules of ``common`` (each checked below, at any depth) and the core.
CORE_MAY_IMPORT = set(sys.stdlib_module_names) | {"msgspec", "common", "ledger"}


def module_paths(root: Path, folders: tuple[str, ...]) -> dict[str, Path]:
    """Each module of ``folders`` (migrations aside) -> its file, named as ``import_graph`` names it."""
    paths = [p for f in folders for p in (root / f).rglob("*.py") if "migrations" not in p.parts]
    return {module_name(root, p): p for p in paths}


def core_offences(root: Path) -> list[str]:
    """Why the ledger's core (``services/ledger/core``) is not free of I/O: a module of the
    core importing a library other than the standard library and msgspec, or a module of the
    ledger outside the core (the shell); or any module the core reaches by import, at any depth
    and lazy imports included (the core's own, the ``common`` modules it stands on, and
    theirs), importing a library of :data:`IO_LIBRARIES`."""
    graph = import_graph(root, ("libs", "services"))
    paths = module_paths(root, ("libs", "services"))
    core = sorted(m for m in graph if m == CORE or m.startswith(f"{CORE}."))
    found = []
    for name in core:
        if outside := sorted(_imported_tops(paths[name]) - CORE_MAY_IMPORT - IO_LIBRARIES):
            found.append(f"{name} imports {', '.join(outside)}")
        if shell := sorted(m for m in graph[name] if m.startswith("ledger.") and not m.startswith(CORE)):
            found.append(f"{name} imports the shell: {', '.join(shell)}")
    reached, todo = set(core), list(core)
    while todo:
        for imported in graph[todo.pop()] - reached:
            reached.add(imported)
            todo.append(imported)
    for name in sorted(reached):
        if io := sorted(_imported_tops(paths[name]) & IO_LIBRARIES):
            found.append(f"{name} (reached from {CORE}) imports {', '.join(io)}")
    return found


@pytest.mark.unit
def test_the_ledgers_core_reaches_no_database_cache_or_broker() -> None:
    """The decisions of ``services/ledger/core`` run without a session, a connection or a
    broker (Cosmic Python's domain: the standard library and its own contracts); the shell
    around it (the rest of ``ledger``) reads, calls it, and writes what it decided."""
    assert len([m for m in import_graph(ROOT, ("services",)) if m.startswith(f"{CORE}.")]) >= 5
    assert core_offences(ROOT) == []


@pytest.mark.unit
def test_the_core_check_finds_an_io_import_direct_lazy_or_through_common(tmp_path: Path) -> None:
    def write(relative: str, text: str = "") -> None:
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    for package in ("libs/common", "services/ledger", "services/ledger/core"):
        write(f"{package}/__init__.py")
    write("services/ledger/core/plans.py", "import sqlalchemy\nfrom ledger.core import money\n")
    write("services/ledger/core/money.py", "def f():\n    from sqlmodel import Field\n")
    write("services/ledger/core/funds.py", "from common import pure\nfrom ledger import journal\n")
    write("services/ledger/core/clean.py", "import decimal\nimport msgspec\nfrom common import pure\n")
    write("services/ledger/core/caches.py", "import httpx\n")
    write("libs/common/pure.py", "from common import store\n")
    write("libs/common/store.py", "import asyncpg\n")
    write("services/ledger/journal.py", "import sqlalchemy\n")
    assert core_offences(tmp_path) == [
        "ledger.core.caches imports httpx",
        "ledger.core.funds imports the shell: ledger.journal",
        "common.store (reached from ledger.core) imports asyncpg",
        "ledger.core.money (reached from ledger.core) imports sqlmodel",
        "ledger.core.plans (reached from ledger.core) imports sqlalchemy",
        "ledger.journal (reached from ledger.core) imports sqlalchemy",
    ]

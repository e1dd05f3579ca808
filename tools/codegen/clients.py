"""The partner SDKs' generated halves, made from the gateway's OpenAPI document.

``python -m tools.codegen.clients write`` (``make clients``) rebuilds, from
:func:`gateway.openapi.document.build_document` (the document ``GET /schema/openapi.json`` serves):

- ``clients/openapi.json``: the document itself, as the gateway serves it;
- ``clients/python/sluice_api/``: openapi-python-client's package (PyPI, pinned in uv.lock);
- ``clients/typescript/src/schema.ts``: openapi-typescript's types (npm, pinned in
  ``clients/typescript/package-lock.json``), used through openapi-fetch;
- the resource layers of both SDKs (``tools.codegen.sdk_resources``): ``sluice_sdk/schemas.py``,
  ``sluice_sdk/resources.py`` and ``src/resources.ts``, one method per operation.

``python -m tools.codegen.clients check`` generates the same into a temporary directory and exits 1
naming every file that differs from the committed one (``tests/unit/test_clients_drift.py``).

Both generators read :func:`for_generators` of the document, the same document with five
rewrites that change no request or answer the gateway accepts:

- a request body stated as ``allOf: [$ref, rules]`` becomes the ``$ref``: the rules
  (``gateway.openapi.rules``) are cross-field conditions the gateway enforces, and
  openapi-python-client 0.29 cannot merge a property's ``anyOf`` with the struct's property (it
  dropped ``POST /v1/payouts``); the bodies keep the structs' names (``TransferCreate``);
- ``{"enum": [false]}`` (msgspec's ``Literal[False]``) becomes ``{"const": false}``, which the
  Python generator reads (it dropped the error envelope);
- the ``x-service-mode`` header's inline enum becomes one ``ServiceMode`` component instead of
  one generated enum per operation;
- the ``Idempotency-Key`` header is optional in the generated calls: the hand-written layer
  supplies one per logical operation (the body's ``idempotency_key`` for transfers and
  payouts) and reuses it on every retry; a caller may still pass their own;
- the routed form's body (``RoutedBody``: any payload whose numbers are bounded, stated as a
  recursive union through ``BoundedJson``) becomes any JSON (``{}``), as before: openapi-python-client 0.29
  cannot read a recursive union (it dropped ``POST /``), and the bound is the server's to check.
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from tools.codegen import sdk_resources
from tools.stack.processes import ROOT

CLIENTS = ROOT / "clients"
PY_PACKAGE = "sluice_api"
TS_DIR = CLIENTS / "typescript"
TS_SCHEMA = Path("typescript/src/schema.ts")
TS_RESOURCES = Path("typescript/src/resources.ts")
PY_SDK = Path("python/sluice_sdk")
PY_RESOURCES = (PY_SDK / "schemas.py", PY_SDK / "resources.py")
_MODE_REF = {"$ref": "#/components/schemas/ServiceMode"}


def document() -> dict[str, Any]:
    from gateway.app import ENDPOINTS
    from gateway.openapi.document import build_document

    return build_document(ENDPOINTS)


def _dump(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def _rewrite_consts(node: Any) -> Any:
    if isinstance(node, dict):
        if list(node) == ["enum"] and len(node["enum"]) == 1 and isinstance(node["enum"][0], bool):
            return {"const": node["enum"][0]}
        return {k: _rewrite_consts(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_rewrite_consts(v) for v in node]
    return node


def for_generators(doc: dict[str, Any]) -> dict[str, Any]:
    """The document both generators read (see the module docstring for each rewrite)."""
    out: dict[str, Any] = _rewrite_consts(copy.deepcopy(doc))
    for ops in out["paths"].values():
        for op in ops.values():
            for param in op.get("parameters", []):
                if param["in"] == "header" and param["name"] == "x-service-mode":
                    param["schema"] = _MODE_REF
                if param["in"] == "header" and param["name"] == "Idempotency-Key":
                    param["required"] = False
            media = op.get("requestBody", {}).get("content", {}).get("application/json", {})
            parts = media.get("schema", {}).get("allOf", [])
            if len(parts) == 2 and "$ref" in parts[0]:
                media["schema"] = parts[0]
    out["components"]["schemas"]["ServiceMode"] = {"type": "string", "enum": ["sandbox", "production"]}
    routed = out["paths"]["/"]["post"]["requestBody"]["content"]["application/json"]
    routed["schema"] = {}  # as before the bound was stated: any JSON
    for name in ("RoutedBody", "BoundedJson"):
        out["components"]["schemas"].pop(name)
    return out


def _python(doc_path: Path, dest: Path) -> None:
    out = dest / "python" / PY_PACKAGE
    out.parent.mkdir(parents=True, exist_ok=True)
    bin_dir = Path(sys.executable).parent
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(dest)}
    cmd = [
        str(bin_dir / "openapi-python-client"),
        "generate",
        "--path",
        str(doc_path),
        "--meta",
        "none",
        "--config",
        str(CLIENTS / "python" / "generator.yaml"),
        "--output-path",
        str(out),
        "--fail-on-warning",
    ]
    run = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if run.returncode != 0:
        raise RuntimeError(f"openapi-python-client failed:\n{run.stdout}\n{run.stderr}")
    # PEP 561: without the marker a partner's mypy skips the package ("missing library stubs")
    # and every generated type is Any. `--meta none` writes no marker of its own.
    (out / "py.typed").write_text("")


def _typescript(doc_path: Path, dest: Path) -> None:
    out = dest / TS_SCHEMA
    out.parent.mkdir(parents=True, exist_ok=True)
    tool = TS_DIR / "node_modules" / ".bin" / "openapi-typescript"
    if not tool.exists():
        raise RuntimeError(f"{tool} is missing: run `make clients-setup` (npm ci in {TS_DIR})")
    run = subprocess.run(
        [str(tool), str(doc_path), "--default-non-nullable=false", "--output", str(out)],
        cwd=TS_DIR,
        capture_output=True,
        text=True,
        check=False,
    )
    if run.returncode != 0:
        raise RuntimeError(f"openapi-typescript failed:\n{run.stdout}\n{run.stderr}")


def _resources(doc: dict[str, Any], dest: Path) -> None:
    """The resource layers (tools.codegen.sdk_resources) from the generators' document."""
    sdk = dest / PY_SDK
    sdk.mkdir(parents=True, exist_ok=True)
    (sdk / "schemas.py").write_text(sdk_resources.python_schemas(doc))
    (sdk / "resources.py").write_text(sdk_resources.python_resources(doc))
    ruff = Path(sys.executable).parent / "ruff"
    for args in (["check", "--fix-only", "--select", "I,F401"], ["format"]):
        cmd = [str(ruff), *args, "--isolated", "--no-cache", "--line-length", "110", "--quiet"]
        subprocess.run([*cmd, "schemas.py", "resources.py"], cwd=sdk, check=True)
    (dest / TS_RESOURCES).write_text(sdk_resources.typescript_resources(doc))


def generate(dest: Path) -> None:
    """Everything ``make clients`` writes, under ``dest`` (laid out as ``clients/``)."""
    doc = document()
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "openapi.json").write_text(_dump(doc))
    work = dest / ".work"
    work.mkdir()
    normalised = work / "openapi.generators.json"
    normalised.write_text(_dump(for_generators(doc)))
    _python(normalised, dest)
    _typescript(normalised, dest)
    _resources(for_generators(doc), dest)
    shutil.rmtree(work)


def _files(root: Path) -> dict[str, bytes]:
    """The generated files under ``root`` by relative path (caches left out)."""
    found = {"openapi.json": root / "openapi.json", str(TS_SCHEMA): root / TS_SCHEMA}
    for generated in (TS_RESOURCES, *PY_RESOURCES):
        found[str(generated)] = root / generated
    package = root / "python" / PY_PACKAGE
    if package.exists():
        for p in package.rglob("*"):
            if p.is_file() and "__pycache__" not in p.parts:
                found[str(p.relative_to(root))] = p
    return {name: p.read_bytes() for name, p in found.items() if p.exists()}


def stale() -> list[str]:
    """The generated files whose committed copy differs from a fresh generation (or is
    missing, or is no longer generated)."""
    with tempfile.TemporaryDirectory() as tmp:
        generate(Path(tmp))
        fresh = _files(Path(tmp))
    committed = _files(CLIENTS)
    return sorted(n for n in fresh.keys() | committed.keys() if fresh.get(n) != committed.get(n))


def write() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        generate(Path(tmp))
        shutil.copyfile(Path(tmp) / "openapi.json", CLIENTS / "openapi.json")
        for generated in (TS_SCHEMA, TS_RESOURCES, *PY_RESOURCES):
            shutil.copyfile(Path(tmp) / generated, CLIENTS / generated)
        shutil.rmtree(CLIENTS / "python" / PY_PACKAGE, ignore_errors=True)
        shutil.copytree(Path(tmp) / "python" / PY_PACKAGE, CLIENTS / "python" / PY_PACKAGE)


def main(argv: list[str]) -> int:
    if argv[1:] == ["write"]:
        write()
        print("clients: regenerated clients/openapi.json, clients/python/sluice_api, " + str(TS_SCHEMA))
        return 0
    if argv[1:] == ["check"]:
        changed = stale()
        for name in changed:
            print(f"clients: stale {name}")
        print("clients: up to date" if not changed else "clients: run `make clients`")
        return 1 if changed else 0
    print("usage: python -m tools.codegen.clients write|check", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))

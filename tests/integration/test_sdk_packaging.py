"""The partner SDKs install from their built artefacts as docs/sdks/install.md says: the wheel
(``uv build``) into a new virtual environment, the npm tarball (``npm pack``, which builds on
prepack) into a new npm project holding nothing but the package and TypeScript (no
@types/node), with the page's own tsconfig.json. There a partner's script
(tests/support/partner) type-checks strictly (mypy --strict; tsc --strict without
skipLibCheck), the same script with a misspelt field does not, and the script runs against the
stack. The SDK pages' walk-throughs (the example files the pages include) type-check and run
against the stack from the artefacts too, with what the install page says to install and
nothing else. Nothing of this repository is on the partner's path: only what the artefacts
carry."""

from __future__ import annotations

import email
import json
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from importlib import metadata
from pathlib import Path

import pytest

from tests.conftest import Stack, Tenant
from tests.support.node import dist_lock
from tools.stack.processes import free_port

pytestmark = [pytest.mark.integration, pytest.mark.long]
ROOT = Path(__file__).resolve().parents[2]
PY = ROOT / "clients" / "python"
TS = ROOT / "clients" / "typescript"
PARTNER = ROOT / "tests" / "support" / "partner"
# The partner's tsconfig.json as docs/sdks/install.md shows it (the page includes this file).
TSCONFIG = ROOT / "docs" / "sdks" / "tsconfig.json"
# The misspelling each language's type checker must catch (a body field of POST /v1/customers).
GOOD_FIELD, BAD_FIELD = "email=", "emial="
GOOD_TS_FIELD, BAD_TS_FIELD = "email:", "emial:"


def _uv() -> str:
    found = shutil.which("uv") or str(Path.home() / ".local" / "bin" / "uv")
    assert Path(found).exists(), "uv is missing: `make setup` installs it"
    return found


def _clean_env(**extra: str) -> dict[str, str]:
    """The environment of a partner's machine: no import path, virtual environment or mypy
    path of this repository."""
    drop = {"PYTHONPATH", "VIRTUAL_ENV", "MYPYPATH", "UV_PROJECT_ENVIRONMENT", "NODE_PATH"}
    return {**{k: v for k, v in os.environ.items() if k not in drop}, **extra}


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cmd, cwd=cwd, env=_clean_env(**(env or {})), capture_output=True, text=True, timeout=600, check=False
    )


def _ok(run: subprocess.CompletedProcess[str]) -> str:
    assert run.returncode == 0, f"{run.args}\n{run.stdout[-4000:]}\n{run.stderr[-4000:]}"
    return run.stdout


@dataclass
class PythonPartner:
    wheel: Path
    python: Path
    home: Path


@dataclass
class NodePartner:
    tarball: Path
    home: Path


def _node_project(home: Path, tarball: Path, *packages: str) -> None:
    """A new npm project (an ECMAScript module, the install page's tsconfig.json) with the
    tarball and ``packages`` installed, nothing else."""
    home.mkdir()
    (home / "package.json").write_text(json.dumps({"name": "partner", "private": True, "type": "module"}))
    npm = ["npm", "install", "--no-audit", "--no-fund", "--prefer-offline", str(tarball), *packages]
    _ok(_run(npm, cwd=home))
    shutil.copy(TSCONFIG, home / "tsconfig.json")


@pytest.fixture(scope="module")
def python_partner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PythonPartner]:
    tmp = tmp_path_factory.mktemp("python-partner")
    _ok(_run([_uv(), "build", "--wheel", "--out-dir", str(tmp / "dist"), str(PY)], cwd=tmp))
    (wheel,) = (tmp / "dist").glob("*.whl")
    home = tmp / "partner"
    home.mkdir()
    _ok(_run([_uv(), "venv", "--quiet", "--python", sys.executable, str(home / "venv")], cwd=home))
    python = home / "venv" / "bin" / "python"
    mypy = f"mypy=={metadata.version('mypy')}"  # the suite's mypy, from PyPI
    _ok(_run([_uv(), "pip", "install", "--quiet", "--python", str(python), str(wheel), mypy], cwd=home))
    yield PythonPartner(wheel, python, home)


@pytest.fixture(scope="module")
def node_partner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodePartner]:
    tmp = tmp_path_factory.mktemp("node-partner")
    with dist_lock(exclusive=True):  # prepack compiles into the tree's dist/, which node runs
        packed = _ok(_run(["npm", "pack", "--json", "--pack-destination", str(tmp)], cwd=TS))
    tarball = tmp / json.loads(packed[packed.index("[") :])[0]["filename"]
    home = tmp / "partner"
    dev = json.loads((TS / "package.json").read_text())["devDependencies"]
    # Nothing but the package and TypeScript: no @types/node, so the package's declarations
    # may name no Node type (its dependencies' declarations are checked too, no skipLibCheck).
    _node_project(home, tarball, f"typescript@{dev['typescript']}")
    installed = json.loads((home / "package-lock.json").read_text())["packages"]
    assert set(installed) >= {"node_modules/@sluice/sdk", "node_modules/typescript"}
    assert not [p for p in installed if "@types/" in p], "a type package came in"
    tsconfig = json.loads(TSCONFIG.read_text())["compilerOptions"]
    assert tsconfig["strict"] is True and "skipLibCheck" not in tsconfig and "types" not in tsconfig
    yield NodePartner(tarball, home)


def _python_script(partner: PythonPartner, name: str, text: str) -> Path:
    path = partner.home / name
    path.write_text(text)
    return path


def _mypy(partner: PythonPartner, *targets: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """mypy --strict in the partner's environment. Its runs share one cache (in the partner's
    home): the wheel's modules and the standard library are analysed once, each script on its
    own every time."""
    cmd = [str(partner.python), "-m", "mypy", "--strict", "--cache-dir", str(partner.home / ".mypy_cache")]
    return _run([*cmd, *targets], cwd=cwd or partner.home)


def _tsc(home: Path, *options: str) -> list[str]:
    """tsc on the project's tsconfig.json; incremental, so a second check of the same project
    (the script misspelt, then as written) analyses the package's declarations once."""
    return [str(home / "node_modules" / ".bin" / "tsc"), "-p", ".", "--incremental", *options]


def test_the_wheel_carries_its_types_license_and_metadata(python_partner: PythonPartner) -> None:
    with zipfile.ZipFile(python_partner.wheel) as whl:
        names = set(whl.namelist())
        (meta_name,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        meta = email.message_from_bytes(whl.read(meta_name))
    assert {"sluice_sdk/py.typed", "sluice_api/py.typed"} <= names, "a package without py.typed"
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), "no LICENSE in the wheel"
    assert meta["License-Expression"] == "Apache-2.0"
    assert meta.get_payload() and "Sluice" in str(meta.get_payload()), "no readme"
    assert meta.get_all("Project-URL"), "no project URLs"
    assert "Typing :: Typed" in (meta.get_all("Classifier") or [])
    required = {r.split(">")[0].split("=")[0].strip().lower() for r in meta.get_all("Requires-Dist") or []}
    assert "python-dateutil" not in required  # nothing imports it
    said = "import sluice_sdk; print(sluice_sdk.__version__)"
    version = _ok(_run([str(python_partner.python), "-c", said], python_partner.home))
    assert version.strip() == meta["Version"]


def test_a_partner_script_type_checks_strictly_against_the_wheel(python_partner: PythonPartner) -> None:
    text = (PARTNER / "partner.py").read_text()
    assert GOOD_FIELD in text
    good = _mypy(python_partner, _python_script(python_partner, "partner.py", text).name)
    assert good.returncode == 0, good.stdout + good.stderr
    misspelt = _python_script(python_partner, "misspelt.py", text.replace(GOOD_FIELD, BAD_FIELD, 1))
    bad = _mypy(python_partner, misspelt.name)
    assert bad.returncode == 1 and "emial" in bad.stdout, bad.stdout + bad.stderr


def test_the_npm_tarball_ships_a_built_licensed_dual_package(node_partner: NodePartner) -> None:
    installed = node_partner.home / "node_modules" / "@sluice" / "sdk"
    manifest = json.loads((installed / "package.json").read_text())
    assert manifest["license"] == "Apache-2.0" and not manifest.get("private")
    assert (installed / "LICENSE").exists()
    assert not (installed / "test").exists() and not (installed / "src").exists(), "sources shipped"
    exports = manifest["exports"]["."]
    for condition in ("import", "require"):
        for target in exports[condition].values():
            assert (installed / target).exists(), f"{condition} points at missing {target}"
    assert (installed / "dist/src/schema.d.ts").exists() and (
        installed / "dist/cjs/src/schema.d.ts"
    ).exists(), "the generated schema's declarations are not in the package"
    cjs = "const s = require('@sluice/sdk'); if (typeof s.Sluice !== 'function') process.exit(3)"
    _ok(_run(["node", "-e", cjs], cwd=node_partner.home))


def test_a_partner_script_type_checks_strictly_against_the_tarball(node_partner: NodePartner) -> None:
    text = (PARTNER / "partner.ts").read_text()
    assert GOOD_TS_FIELD in text
    home = node_partner.home
    (home / "partner.ts").write_text(text.replace(GOOD_TS_FIELD, BAD_TS_FIELD, 1))
    bad = _run(_tsc(home, "--noEmit"), cwd=home)
    assert bad.returncode != 0 and "emial" in bad.stdout, bad.stdout + bad.stderr
    (home / "partner.ts").write_text(text)
    (home / "require.cts").write_text(  # CommonJS: the client works, openapi-fetch included
        'import { Sluice, VERSION } from "@sluice/sdk";\n'
        'const sluice = new Sluice({ apiKey: "sk_test_x" });\n'
        "console.log(typeof sluice.customers.create, typeof sluice.api.GET, VERSION);\n"
    )
    _ok(_run(_tsc(home), cwd=home))  # the good script, and the package through require (CommonJS)
    assert _ok(_run(["node", "out/require.cjs"], cwd=home)).split()[:2] == ["function", "function"]


def test_the_partner_scripts_run_from_the_artefacts_against_the_stack(
    stack: Stack, tenant: Tenant, python_partner: PythonPartner, node_partner: NodePartner
) -> None:
    env = {"SLUICE_API_URL": stack.gateway, "SLUICE_SANDBOX_KEY": tenant.key}
    script = _python_script(python_partner, "partner.py", (PARTNER / "partner.py").read_text())
    out = _ok(_run([str(python_partner.python), script.name], python_partner.home, env))
    assert "customer True" in out.splitlines() and "event transfer.updated completed" in out.splitlines(), out
    assert {"page True True", "endpoint disabled deleted"} <= set(out.splitlines()), out
    home = node_partner.home
    (home / "partner.ts").write_text((PARTNER / "partner.ts").read_text())
    _ok(_run(_tsc(home), cwd=home))
    out = _ok(_run(["node", "out/partner.js"], home, env))
    assert "customer True" in out.splitlines() and "event transfer.updated completed" in out.splitlines(), out
    assert {"page True True", "endpoint disabled deleted"} <= set(out.splitlines()), out


WALKTHROUGH_LINES = {
    "transfer completed",
    "balance 75",
    "balance 25",
}  # and the webhook, as each language prints


def _walkthrough_env(stack: Stack, tenant: Tenant) -> dict[str, str]:
    return {
        "SLUICE_API_URL": stack.gateway,
        "SLUICE_SANDBOX_KEY": tenant.key,
        "RECEIVER_PORT": str(free_port()),
    }


def _said(out: str) -> set[str]:
    """The walk-through's lines, amounts as the gateway writes them (75.000000 is 75)."""
    lines = set()
    for line in out.splitlines():
        word, _, value = line.partition(" ")
        amount = word == "balance" and value.replace(".", "", 1).isdigit()
        lines.add(f"{word} {Decimal(value).normalize():f}" if amount else line)
    return lines


def test_the_python_walkthrough_runs_from_the_wheel_alone(
    stack: Stack, tenant: Tenant, python_partner: PythonPartner
) -> None:
    """docs/sdks/python.md's walk-through and receiver (the example files it includes), in the
    partner's environment: the wheel and the standard library, nothing else."""
    home = python_partner.home / "walkthrough"
    home.mkdir()
    for name in ("walkthrough.py", "webhook_receiver.py"):
        shutil.copy(PY / "examples" / name, home / name)
    checked = _mypy(python_partner, ".", cwd=home)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    out = _ok(_run([str(python_partner.python), "walkthrough.py"], home, _walkthrough_env(stack, tenant)))
    assert _said(out) >= {*WALKTHROUGH_LINES, "webhook transfer.created True"}, out


def test_the_typescript_walkthrough_runs_from_the_tarball(
    stack: Stack, tenant: Tenant, node_partner: NodePartner, tmp_path: Path
) -> None:
    """docs/sdks/typescript.md's walk-through and receiver (the example files it includes), in a
    new project with what docs/sdks/install.md installs for a Node server: the tarball,
    TypeScript and Node's types (the receiver is a node:http server)."""
    dev = json.loads((TS / "package.json").read_text())["devDependencies"]
    home = tmp_path / "walkthrough"
    _node_project(
        home, node_partner.tarball, f"typescript@{dev['typescript']}", f"@types/node@{dev['@types/node']}"
    )
    for name in ("walkthrough.ts", "receiver.ts"):
        shutil.copy(TS / "examples" / name, home / name)
    _ok(_run([str(home / "node_modules" / ".bin" / "tsc"), "-p", "."], cwd=home))
    out = _ok(_run(["node", "out/walkthrough.js"], home, _walkthrough_env(stack, tenant)))
    assert _said(out) >= {*WALKTHROUGH_LINES, "webhook transfer.created true"}, out

"""The API reference's code samples run: the three example scripts the reference cuts its
Python, TypeScript and curl samples from (tools/codegen/reference.py) call every operation of
the API once, in order, against the stack, each for a tenant of its own with an approved bank
account for the payout, and end with the states they reached."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Stack, make_tenant
from tests.support.admin import approved_ach_account
from tests.support.flows import funded
from tests.support.node import TS, build, dist_lock
from tools.codegen.reference import SAMPLES

pytestmark = [pytest.mark.integration, pytest.mark.long]
ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = {label: path for _, label, path, _ in SAMPLES}


def _env(stack: Stack) -> dict[str, str]:
    """A sandbox tenant, and one of its customers with a funded wallet and an approved ACH
    account (a payout pays the account holder's own bank account)."""
    t = make_tenant(stack, rate_limit=100000)
    holder = funded(t, "50.00")
    account = approved_ach_account(stack, t.tenant_id, holder["customer_id"])
    keep = {k: v for k, v in os.environ.items() if k not in ("SLUICE_MODE", "SLUICE_LIVE_KEY")}
    # the SDK from the tree, as pytest's own path has it (make test's PYTHONPATH lacks it)
    sdk = str(ROOT / "clients" / "python")
    return {
        **keep,
        "PYTHONPATH": os.pathsep.join(p for p in (sdk, keep.get("PYTHONPATH", "")) if p),
        "SLUICE_API_URL": stack.gateway,
        "SLUICE_SANDBOX_KEY": t.key,
        "SLUICE_EXTERNAL_ACCOUNT_ID": account,
        "SLUICE_PAYOUT_WALLET_ID": holder["wallet_id"],
    }


def _run(cmd: list[str], env: dict[str, str], cwd: Path = ROOT) -> str:
    run = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    return run.stdout


def test_the_python_samples_run(stack: Stack) -> None:
    out = _run([sys.executable, str(SCRIPTS["Python"])], _env(stack))
    assert out.splitlines()[-1].split()[:5] == ["done", "completed", "pending", "disabled", "deleted"], out


def test_the_typescript_samples_run(stack: Stack) -> None:
    build()  # tsc --build clients/typescript: the package and its examples
    script = TS / "dist" / "examples" / "reference.js"
    env = _env(stack)
    with dist_lock(exclusive=False):  # another worker may be compiling into dist/
        out = _run(["node", str(script)], env, cwd=TS)
    assert out.splitlines()[-1].split()[:5] == ["done", "completed", "pending", "disabled", "deleted"], out


def test_the_curl_samples_run(stack: Stack) -> None:
    out = _run(["bash", str(SCRIPTS["curl"])], _env(stack))
    assert out.splitlines()[-1].startswith("done ") and int(out.split()[-1]) > 10, out
    assert '"state":"completed"' in out.replace(" ", "") and '"status":"deleted"' in out.replace(" ", ""), out

"""``make mutate``: mutation testing (mutmut 3) of the money-critical modules (issue 24).

Every mutant is a small change to one function (``<`` for ``<=``, a constant off by one, a
branch dropped); a mutant the unit tests do not notice "survives" and names a check nobody
wrote. The score per module is printed and written to ``.sluice/mutate/score.md``; the run
fails (exit 1) below ``--min-score`` (90 %).

mutmut names a mutant after its file's path from the project root, while the tests import
each package by its own name (``common.fees``, ``ledger.journal``: pytest's pythonpath holds
``libs/`` and ``services/``). The run therefore happens in a workspace that lays the packages
out flat (``.sluice/mutate/common``, ``.../ledger``, ...) beside a copy of the tests and a
``pyproject.toml`` whose ``[tool.mutmut]`` names the modules below. Only the unit tests run
(fast, no stores): the functions mutated are the pure money rules, and the unit tests must
be enough to pin them. Functions that only move rows to and from the database are excluded
with ``# pragma: no mutate`` blocks in place, each saying which integration test covers it.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORK = ROOT / ".sluice" / "mutate"

# module (flat path) -> what it decides
TARGETS: dict[str, str] = {
    "common/fees.py": "developer fee arithmetic",
    "common/money.py": "currency places",
    "common/addresses.py": "on-chain address parsing (EIP-55, base58check)",
    "common/checksums.py": "ABA routing and IBAN check digits",
    "ledger/effects.py": "amount parsing and money formatting",
    "ledger/fees.py": "the fee a transfer charges",
    "ledger/journal.py": "double entry, batch application and overdraft rules",
    "compliance/rules.py": "fail-closed policy: jurisdiction, routes, caps, review",
    "compliance/allowance.py": "the daily cap of a batch",
    "webhooks/signing.py": "webhook signatures",
    "gateway/idempotency.py": "idempotency fingerprints and records",
    "gateway/rules.py": "amount, pair and bank-number checks at the door",
}
# the unit tests that pin those modules (the others read the repository's files)
TESTS = [
    "tests/unit/test_addresses.py",
    "tests/unit/test_compliance_rules.py",
    "tests/unit/test_door_rules.py",
    "tests/unit/test_gateway_unit.py",
    "tests/unit/test_money_logic.py",
    "tests/unit/test_policy_verdicts.py",
    "tests/unit/test_webhooks_unit.py",
]
PACKAGES = {
    p.name: p for d in ("libs", "services") for p in (ROOT / d).iterdir() if (p / "__init__.py").exists()
}
STATUS = re.compile(r"^\s*(?P<name>[\w.ǁ]+__mutmut_\d+): (?P<status>[\w ]+)$")

PYPROJECT = """\
[tool.pytest.ini_options]
pythonpath = ["."]
testpaths = ["tests/unit"]
addopts = "-p no:cacheprovider -q"
markers = ["unit: pure logic", "integration: real stores"]
asyncio_mode = "auto"
asyncio_default_fixture_loop_scope = "function"

[tool.mutmut]
source_paths = {sources}
only_mutate = {targets}
pytest_add_cli_args_test_selection = {tests}
also_copy = {copy}
"""


def workspace() -> Path:
    """The flat copy of the packages and tests mutmut works in."""
    WORK.mkdir(parents=True, exist_ok=True)
    # mutmut keeps results per function and re-tests only changed functions, not changed
    # tests: start clean so the score is the tests' of today
    shutil.rmtree(WORK / "mutants", ignore_errors=True)
    for name, src in PACKAGES.items():
        dst = WORK / name
        if dst.exists():
            shutil.rmtree(dst)
        shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", "migrations"))
    tests = WORK / "tests"
    if tests.exists():
        shutil.rmtree(tests)
    shutil.copytree(ROOT / "tests", tests, ignore=shutil.ignore_patterns("__pycache__", "integration"))
    sources = sorted({t.split("/")[0] for t in TARGETS})
    (WORK / "pyproject.toml").write_text(
        PYPROJECT.format(
            sources=_toml(sources),
            targets=_toml(list(TARGETS)),
            tests=_toml(TESTS),
            copy=_toml([*sorted(set(PACKAGES) - set(sources)), "tests/"]),
        )
    )
    return WORK


def _toml(items: list[str]) -> str:
    return "[" + ", ".join(f'"{i}"' for i in items) + "]"


def scores(results: str) -> dict[str, Counter[str]]:
    """mutmut's ``results --all true`` lines grouped by module: status -> count."""
    by_module: dict[str, Counter[str]] = defaultdict(Counter)
    for line in results.splitlines():
        m = STATUS.match(line)
        if not m:
            continue
        module = m["name"].split(".x_")[0].split(".xǁ")[0]
        by_module[module][m["status"].strip()] += 1
    return by_module


def killed_share(c: Counter[str]) -> float:
    """Killed (or timed out: the mutant hung, a test noticed) out of every mutant a test could
    have killed; ``no tests`` counts as survived (nothing checks that code)."""
    total = sum(c.values()) - c["skipped"]
    return (c["killed"] + c["timeout"]) / total if total else 1.0


def report(by_module: dict[str, Counter[str]]) -> tuple[str, float]:
    lines = [
        "| module | decides | mutants | killed | survived | no tests | score |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    total: Counter[str] = Counter()
    for path, what in TARGETS.items():
        module = path.removesuffix(".py").replace("/", ".")
        c = by_module.get(module, Counter())
        total.update(c)
        lines.append(
            f"| `{module}` | {what} | {sum(c.values())} | {c['killed'] + c['timeout']} | {c['survived']} "
            f"| {c['no tests']} | {100 * killed_share(c):.1f} % |"
        )
    score = killed_share(total)
    lines.append(
        f"| **all** | | {sum(total.values())} | {total['killed'] + total['timeout']} | {total['survived']} "
        f"| {total['no tests']} | **{100 * score:.1f} %** |"
    )
    return "\n".join(lines), score


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m devstack.mutate", description=__doc__.split("\n\n")[0])
    ap.add_argument("--min-score", type=float, default=0.90)
    ap.add_argument("--max-children", type=int, default=2)
    args = ap.parse_args(argv)
    work = workspace()
    mutmut = [sys.executable, "-m", "mutmut"]
    log = work / "run.log"
    print(f"mutate: mutmut run in {work} (progress in {log})", flush=True)
    with log.open("w") as out:
        run = subprocess.run(
            [*mutmut, "run", "--max-children", str(args.max_children)],
            cwd=work,
            stdout=out,
            stderr=subprocess.STDOUT,
            check=False,
        )
    if run.returncode not in (0, 1):
        print(f"mutmut run failed (exit {run.returncode}); the end of {log}:", file=sys.stderr)
        print(log.read_text()[-3000:], file=sys.stderr)
        return 2
    out = subprocess.run(
        [*mutmut, "results", "--all", "true"], cwd=work, capture_output=True, text=True, check=True
    ).stdout
    table, score = report(scores(out))
    survivors = [
        line.strip() for line in out.splitlines() if line.rstrip().endswith(("survived", "no tests"))
    ]
    text = f"{table}\n\nSurvivors ({len(survivors)}):\n" + "\n".join(f"- `{s}`" for s in survivors) + "\n"
    (work / "score.md").write_text(text)
    print(text)
    print(
        f"mutate: score {100 * score:.1f} % (minimum {100 * args.min_score:.0f} %); see {work / 'score.md'}"
    )
    return 0 if score >= args.min_score else 1


if __name__ == "__main__":
    raise SystemExit(main())

"""``make mutate``: mutation testing (mutmut 3) of the money-critical modules.

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

Every target must reach ``--min-score`` on its own, and a target with no mutant fails: a
changed mutmut output, or a path that matches nothing, must not pass as 100 %.
``--only ledger/core/chain.py`` (repeatable) mutates the named targets alone.
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
    "ledger/core/effects.py": "amount parsing and money formatting",
    "ledger/core/fees.py": "the fee a transfer charges",
    "ledger/core/accounts.py": "the chart of accounts and the postings of a completion",
    "ledger/core/entries.py": "double entry, the funds check of a batch (overdraft rules), chained rows",
    "ledger/journal.py": "a batch's journal: what is locked, checked and written, in that order",
    "compliance/rules.py": "fail-closed policy: jurisdiction, routes, caps, review",
    "compliance/allowance.py": "the daily cap of a batch",
    "webhooks/signing.py": "webhook signatures",
    "gateway/idempotency.py": "idempotency fingerprints and records",
    "gateway/rules.py": "amount, pair and bank-number checks at the door",
    "ledger/core/chain.py": "the journal's hash chain (canonical text, link)",
    "ledger/verification.py": "verify_journal: the first entry a chain no longer matches",
    "ledger/reconcile.py": "reconciliation: totals and the four row checks",
    "ledger/core/states.py": "the transfer state machine, the money of each move, the sandbox's steps",
    "ledger/states.py": "the one transition of a stored transfer: checked, posted, recorded",
    "ledger/core/transfers.py": "a batch of transfers decided: replays, twins, holds, settlements, answers",
    "gateway/door/admission.py": "admission control: in-flight bounds at the door",
    "common/clientaddr.py": "the client address behind trusted proxies",
    # the trust modules: the door, credentials, keys, anchors and where money may go
    "gateway/door/concurrency_limit.py": (
        "the adaptive concurrency limit (Gradient2, its window) and the queue-delay override"
    ),
    "gateway/door/asgi.py": "the door's lane, identity and prebuilt 503 of each request before the app",
    "ledger/anchors.py": "which journal chains are anchored, and which refused as no longer extending",
    "common/auth.py": "API key format and hash, cache names, access token lifetime and claims",
    "admin/operators/tokens.py": "which operator a bearer token is, and with which role",
    "common/secret_strength.py": "whether a secret is strong enough, and how an admin token entry splits",
    "common/keyring.py": "sealing at rest: which key seals, which opens, what a ciphertext must carry",
    "webhooks/targets.py": "which webhook endpoint URLs are acceptable (SSRF vetting)",
    "compliance/screening.py": "screened-address entries: the chain, the address, the reason, the page",
    "ledger/core/parties.py": "the wallets a transfer names, and its route (book, onchain, external, payout)",
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
    "tests/unit/test_admission.py",
    "tests/unit/test_admission_sim.py",
    "tests/unit/test_door.py",
    "tests/unit/test_clientaddr.py",
    "tests/unit/test_client_keys.py",
    "tests/unit/test_event_clock.py",
    "tests/unit/test_journal_verification.py",
    "tests/unit/test_journal_anchors.py",
    "tests/unit/test_reconcile.py",
    "tests/unit/test_states.py",
    "tests/unit/test_ledger_core.py",
    "tests/unit/test_transfer_ids.py",
    "tests/unit/test_transfers_core.py",
    # the trust modules' own tests
    "tests/unit/test_limit.py",
    "tests/unit/test_door_protocol.py",
    "tests/unit/test_gateway_unavailable.py",
    "tests/unit/test_journal_anchor_chain.py",
    "tests/unit/test_control_reader.py",
    "tests/unit/test_secret_strength.py",
    "tests/unit/test_cache_mac.py",
    "tests/unit/test_sealed_fields.py",
    "tests/unit/test_webhooks_special.py",
    "tests/unit/test_webhooks_vetting.py",
    "tests/unit/test_ledger_parties.py",
    "tests/unit/test_operator_tokens.py",
    "tests/unit/test_screening.py",
    "tests/unit/test_keyring_rules.py",
    "tests/unit/test_webhook_targets.py",
    "tests/unit/test_door_edges.py",
    "tests/unit/test_anchor_plan.py",
    "tests/unit/test_auth_tokens.py",
]
# tests of those files that read the repository's own layout, which the flat copy does not have
DESELECT = [
    "tests/unit/test_client_keys.py::test_the_onboarding_limiter_keys_by_the_same_function",
    "tests/unit/test_gateway_unavailable.py::test_no_503_is_built_without_a_reason",
    "tests/unit/test_journal_anchor_chain.py::test_the_alert_fires_on_the_unanchored_gauge_past_three_intervals",
]
# the product's packages, and the tools the tests' conftest starts stores with
PACKAGES = {
    p.name: p for d in ("libs", "services") for p in (ROOT / d).iterdir() if (p / "__init__.py").exists()
} | {"tools": ROOT / "tools"}
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
pytest_add_cli_args = {deselect}
also_copy = {copy}
"""


def workspace(targets: dict[str, str]) -> Path:
    """The flat copy of the packages and tests mutmut works in, set to mutate ``targets``."""
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
    sources = sorted({t.split("/")[0] for t in targets})
    (WORK / "pyproject.toml").write_text(
        PYPROJECT.format(
            sources=_toml(sources),
            targets=_toml(list(targets)),
            tests=_toml(TESTS),
            deselect=_toml([arg for test in DESELECT for arg in ("--deselect", test)]),
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
    have killed; ``no tests`` and every other status (not checked, suspicious) count as
    survived. No mutant at all is 0, never 100 %: nothing was shown to be checked."""
    total = sum(c.values()) - c["skipped"]
    return (c["killed"] + c["timeout"]) / total if total > 0 else 0.0


def report(
    by_module: dict[str, Counter[str]], targets: dict[str, str], min_score: float
) -> tuple[str, float, list[str]]:
    """The score table, the overall score, and each target that fails: no mutant counted, or
    below ``min_score`` on its own."""
    lines = [
        "| module | decides | mutants | killed | survived | no tests | score |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    total: Counter[str] = Counter()
    failing = []
    for path, what in targets.items():
        module = path.removesuffix(".py").replace("/", ".")
        c = by_module.get(module, Counter())
        total.update(c)
        share = killed_share(c)
        if sum(c.values()) - c["skipped"] <= 0:
            failing.append(
                f"{module}: no mutant counted (a path matching nothing, or mutmut's output changed)"
            )
        elif share < min_score:
            failing.append(f"{module}: {100 * share:.1f} % killed, below {100 * min_score:.0f} %")
        lines.append(
            f"| `{module}` | {what} | {sum(c.values())} | {c['killed'] + c['timeout']} | {c['survived']} "
            f"| {c['no tests']} | {100 * share:.1f} % |"
        )
    score = killed_share(total)
    lines.append(
        f"| **all** | | {sum(total.values())} | {total['killed'] + total['timeout']} | {total['survived']} "
        f"| {total['no tests']} | **{100 * score:.1f} %** |"
    )
    return "\n".join(lines), score, failing


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.mutate.run", description=__doc__.split("\n\n")[0])
    ap.add_argument("--min-score", type=float, default=0.90)
    ap.add_argument("--max-children", type=int, default=2)
    ap.add_argument("--only", action="append", choices=sorted(TARGETS), help="mutate this target alone")
    args = ap.parse_args(argv)
    targets = {t: TARGETS[t] for t in args.only} if args.only else TARGETS
    work = workspace(targets)
    mutmut = [sys.executable, "-m", "mutmut"]
    log = work / "run.log"
    print(f"mutate: mutmut run in {work} (progress in {log})", flush=True)
    with log.open("w") as run_log:
        run = subprocess.run(
            [*mutmut, "run", "--max-children", str(args.max_children)],
            cwd=work,
            stdout=run_log,
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
    table, score, failing = report(scores(out), targets, args.min_score)
    survivors = [
        line.strip()
        for line in out.splitlines()
        if STATUS.match(line) and not line.rstrip().endswith(("killed", "timeout", "skipped"))
    ]
    text = f"{table}\n\nSurvivors ({len(survivors)}):\n" + "\n".join(f"- `{s}`" for s in survivors) + "\n"
    (work / "score.md").write_text(text)
    print(text)
    for problem in failing:
        print(f"mutate: FAILED {problem}")
    print(
        f"mutate: score {100 * score:.1f} % (minimum {100 * args.min_score:.0f} % per module); "
        f"see {work / 'score.md'}"
    )
    return 1 if failing else 0


if __name__ == "__main__":
    raise SystemExit(main())

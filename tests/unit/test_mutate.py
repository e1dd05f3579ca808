"""``make mutate`` fails when it cannot have checked anything: a target with no
mutant counted (a path that matches nothing, a changed mutmut output) is a failure, not 100 %,
and each target must reach the minimum on its own, not hide behind the others' average."""

from __future__ import annotations

from collections import Counter

import pytest

from tools.mutate.run import TARGETS, killed_share, report, scores

pytestmark = pytest.mark.unit

RESULTS = """\
    common.fees.x_developer_fee_amount__mutmut_1: killed
    common.fees.x_developer_fee_amount__mutmut_2: killed
    common.fees.x_developer_fee_amount__mutmut_3: survived
    gateway.door.admission.xǁAdmissionǁslot__mutmut_1: killed
    gateway.door.admission.xǁAdmissionǁslot__mutmut_2: timeout
    gateway.door.admission.xǁAdmissionǁ__init____mutmut_1: no tests
    gateway.door.admission.xǁAdmissionǁ__init____mutmut_2: skipped
"""
TWO = {"common/fees.py": "fees", "gateway/door/admission.py": "admission"}


def test_results_are_counted_per_module_methods_included() -> None:
    by_module = scores(RESULTS)
    assert by_module["common.fees"] == Counter({"killed": 2, "survived": 1})
    assert by_module["gateway.door.admission"] == Counter(
        {"killed": 1, "timeout": 1, "no tests": 1, "skipped": 1}
    )


def test_killed_share_counts_timeouts_as_killed_and_no_tests_as_survived() -> None:
    assert killed_share(Counter({"killed": 1, "timeout": 1, "no tests": 1, "skipped": 5})) == pytest.approx(
        2 / 3
    )
    assert killed_share(Counter({"killed": 3, "not checked": 1})) == 0.75


@pytest.mark.parametrize("counted", [Counter(), Counter({"skipped": 4})])
def test_no_mutant_is_no_score(counted: Counter[str]) -> None:
    assert killed_share(counted) == 0.0


def test_a_target_that_matches_nothing_fails_the_run() -> None:
    table, _, failing = report(scores(RESULTS), {**TWO, "ledger/chain.py": "chain"}, 0.5)
    assert failing == [
        "ledger.chain: no mutant counted (a path matching nothing, or mutmut's output changed)"
    ]
    assert "| `ledger.chain` | chain | 0 | 0 | 0 | 0 | 0.0 % |" in table.splitlines()


def test_an_unreadable_output_fails_every_target() -> None:
    _, score, failing = report(scores("mutmut 4 says: 7 killed, 0 survived\n"), TWO, 0.9)
    assert score == 0.0 and len(failing) == 2


def test_each_target_must_reach_the_minimum_on_its_own() -> None:
    table, score, failing = report(scores(RESULTS), TWO, 0.7)
    assert score == pytest.approx(4 / 6)  # 4 of 6 counted
    assert failing == [
        "common.fees: 66.7 % killed, below 70 %",
        "gateway.door.admission: 66.7 % killed, below 70 %",
    ]
    _, _, failing = report(scores(RESULTS), TWO, 0.6)
    assert failing == []
    assert table.splitlines()[-1] == "| **all** | | 7 | 4 | 1 | 1 | **66.7 %** |"


def test_the_round_3_modules_are_targets() -> None:
    for path in (
        "ledger/core/chain.py",
        "ledger/verification.py",
        "ledger/reconcile.py",
        "ledger/core/states.py",
        "gateway/door/admission.py",
        "common/clientaddr.py",
    ):
        assert path in TARGETS


def test_the_trust_modules_are_targets_and_their_tests_are_selected() -> None:
    """Each target is a file of the repository, each selected test exists."""
    from tools.mutate.run import PACKAGES, TESTS

    trust = (
        "gateway/door/concurrency_limit.py",
        "gateway/door/asgi.py",
        "ledger/anchors.py",
        "common/auth.py",
        "admin/operators/tokens.py",
        "common/secret_strength.py",
        "common/keyring.py",
        "webhooks/targets.py",
        "compliance/screening.py",
        "ledger/core/parties.py",
    )
    for path in trust:
        assert path in TARGETS
    for path in TARGETS:
        package, _, name = path.partition("/")
        assert (PACKAGES[package] / name).is_file(), path
    root = PACKAGES["common"].parents[1]
    assert [t for t in TESTS if not (root / t).is_file()] == []
    assert len(set(TESTS)) == len(TESTS)

"""The point-in-time restore drill's verdict (tools.chaos.pitr.audit): clean facts pass, and each
way a restore can be wrong fails it, a missing acknowledged transfer and a broken chain first."""

from __future__ import annotations

import dataclasses

import pytest

from tools.chaos.pitr.audit import PitrFacts, line, problems, verify_verdict

pytestmark = pytest.mark.unit

THROUGH = {"seq": 410, "head_hash": "ab" * 32, "anchored_at": "2026-11-26T22:00:00Z"}


def clean() -> PitrFacts:
    return PitrFacts(
        target="2026-11-26 22:00:03+00:00",
        acknowledged_before=300,
        journal_entries=420,
        verify={"ok": False, "reason": "truncated_tail", "entries": 420, "anchored_through": THROUGH},
        anchors_before=3,
    )


def test_a_restore_to_a_prefix_of_the_anchored_history_is_clean() -> None:
    f = clean()
    assert problems(f) == []
    assert verify_verdict(f) == "truncated_tail through 410"
    assert line(f).endswith(
        "missing 0 duplicated 0 past_T 0 unknown 0 unbalanced 0 reconcile ok"
        " verify_journal truncated_tail through 410 anchors_before_T 3 disagreeing 0 CLEAN"
    )
    # a restore to the end of the archive: no anchor names a later entry
    assert problems(dataclasses.replace(f, verify={"ok": True, "entries": 420})) == []


def test_a_missing_acknowledged_transfer_fails_it() -> None:
    f = dataclasses.replace(clean(), missing=1)
    assert problems(f) == ["1 acknowledged transfers before T missing"]
    assert "FAILED" in line(f)


@pytest.mark.parametrize("reason", ["entry_mismatch", "anchor_mismatch", "entries_missing", "head_mismatch"])
def test_a_broken_chain_fails_it(reason: str) -> None:
    f = dataclasses.replace(clean(), verify={"ok": False, "reason": reason, "entries": 420})
    assert problems(f) == [f"verify_journal {reason}"]


def test_a_truncated_tail_no_anchor_vouches_for_fails_it() -> None:
    f = clean()
    f.verify["anchored_through"] = None
    assert problems(f) == ["verify_journal truncated_tail"]


def test_an_answer_that_leaves_entries_out_fails_it() -> None:
    f = dataclasses.replace(clean(), verify={"ok": True, "entries": 400})
    assert problems(f) == ["verify_journal ok entries 400 of 420"]
    assert problems(dataclasses.replace(clean(), verify={})) == ["verify_journal no_answer"]


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"duplicated": 2}, "2 duplicated"),
        ({"past_target": 1}, "1 transfers created after T restored"),
        ({"unknown": 1}, "1 transfers no client sent"),
        ({"unbalanced": 1}, "1 ledger invariants broken"),
        ({"reconcile": 3}, "3 reconcile discrepancies"),
        ({"reconcile": -1}, "reconcile failed"),
        ({"anchors_disagreeing": 1}, "1 anchors before T disagreeing with the restored journal"),
        ({"acknowledged_before": 0}, "no transfer acknowledged before T"),
        ({"anchors_before": 0}, "no anchor made before T"),
    ],
)
def test_every_other_finding_fails_it(change: dict[str, int], problem: str) -> None:
    assert problems(dataclasses.replace(clean(), **change)) == [problem]


def test_the_restored_cluster_is_given_to_every_role_on_its_own_port() -> None:
    from tools.chaos.pitr.drill import repointed

    env = {
        "SLUICE_DATABASE_URL": "postgresql+asyncpg://postgres@127.0.0.1:5001/sluice_pitr",
        "SLUICE_DATABASE_URL_FOR_LEDGER": "postgresql+asyncpg://sluice_pitr_ledger:pw%2F1@127.0.0.1:5001/sluice_pitr",
        "SLUICE_REDIS_URL": "redis://127.0.0.1:5001/0",
    }
    assert repointed(env, 6002) == {
        "SLUICE_DATABASE_URL": "postgresql+asyncpg://postgres@127.0.0.1:6002/sluice_pitr",
        "SLUICE_DATABASE_URL_FOR_LEDGER": "postgresql+asyncpg://sluice_pitr_ledger:pw%2F1@127.0.0.1:6002/sluice_pitr",
        "SLUICE_REDIS_URL": "redis://127.0.0.1:5001/0",
    }


def test_a_wal_position_is_read_as_a_byte_offset() -> None:
    from tools.chaos.pitr.drill import _lsn

    assert _lsn("0/3000000") - _lsn("0/1000000") == 32 * 2**20
    assert _lsn("1/0") == 2**32

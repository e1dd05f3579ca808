"""PostgreSQL failover (docs/operations/failover.md) on real processes: the suite on a
PostgreSQL primary with two synchronous standbys (tools.chaos.pg_cluster), the services given
every node in one multi-host URL with ``target_session_attrs=read-write``; two ledgers (and two
of every other consumer and of the gateway) book a few hundred transfers from 24 same-key
retrying clients while the primary is SIGKILLed mid-load and, a few seconds later, the harness
promotes the standby that received the most WAL (tools.chaos.scenario --faults failover).

Every acknowledged transfer must be in the promoted primary exactly once (the audit reads the
node that is primary now, through the same multi-host URL), balances exact, and the suite must
answer 201 again to requests sent after the promotion. No speed is asserted: the recovery limit
is the clients' own deadline. The services given only the first primary's address
(``--pg-single-host``) fail this run: see the negative control in
tests/unit/test_pg_cluster.py and the commit that added this test."""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.support.cli import run_module
from tools.stack.processes import ROOT

pytestmark = [pytest.mark.integration, pytest.mark.long, pytest.mark.timeout(400)]

TRANSFERS = 240
DEADLINE_S = 60  # the clients' deadline per transfer; also the recovery limit asserted here
LINE = re.compile(
    r"^chaos: transfers (\d+) lost (\d+) duplicated (\d+) undecided (\d+) balance_drift (\S+) ",
    re.MULTILINE,
)
RECOVERY = re.compile(r"^chaos-failover: failover rpo (\d+) detection_s (\S+) rto_s (\S+) ", re.MULTILINE)


def failover_run(*extra: str) -> subprocess.CompletedProcess[str]:
    """The failover scenario alone: one Kafka node, no other fault."""
    return run_module(
        "tools.chaos.scenario",
        *("--transfers", str(TRANSFERS), "--faults", "failover", "--brokers", "1"),
        *("--deadline-s", str(DEADLINE_S), "--webhook-grace-s", "30", "--rto-limit-s", str(DEADLINE_S)),
        *extra,
        cwd=ROOT,
        timeout=380,
    )


def test_the_suite_finds_the_promoted_standby_and_loses_nothing() -> None:
    out = failover_run()
    audit = out.stdout[-3000:]
    m = LINE.search(out.stdout)
    assert m, f"no audit line (exit {out.returncode}):\n{audit}\n{out.stderr[-3000:]}"
    transfers, lost, duplicated, undecided, drift = m.groups()
    assert (int(transfers), int(lost), int(duplicated), int(undecided)) == (TRANSFERS, 0, 0, 0), audit
    assert float(drift) == 0, audit
    assert "faults fired: 1 of 1" in out.stdout, audit
    promoted = re.search(r"\] (pg\d) promoted", out.stdout)
    assert promoted and promoted.group(1) != "pg0", audit
    # the audit's rows came from the promoted node, not from a stale copy
    assert f"audit read from {promoted.group(1)}, the primary now" in out.stdout, audit
    r = RECOVERY.search(out.stdout)
    assert r, audit
    rpo, _detection, rto = r.groups()
    print(f"\n{r.group(0)}")  # the figures, for the record (not asserted)
    assert int(rpo) == 0, audit
    assert rto != "never", audit  # a 201 to a request sent after the promotion
    assert "dead_letters 0 reconcile_discrepancies 0 journal_chain_broken 0" in out.stdout, audit
    assert out.returncode == 0, audit

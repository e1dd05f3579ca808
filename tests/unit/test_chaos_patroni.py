"""make chaos's Patroni pass (tools.chaos.patroni.faults) without a cluster: which faults it plans,
what each keeps for the recovery objectives (the promotion's start read from the leader key,
a standby or etcd member lost kept as "writes must go on"), and that a leader key that never
changes fails the fault instead of passing it."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tools.chaos.args import parse
from tools.chaos.audit import recovery
from tools.chaos.patroni import faults as chaos_patroni
from tools.chaos.patroni.cluster import PatroniCluster, PatroniError
from tools.chaos.patroni.faults import FAULTS, PatroniFaults, PatroniStore

pytestmark = pytest.mark.unit


@dataclass
class Node:
    name: str
    lost: bool = False


@dataclass
class FakeCluster:
    """A leader, the key in etcd that moves to ``next_leader`` ``after`` reads once the leader
    is lost (None: never), and what was done to it."""

    leader: str = "pg0"
    next_leader: str | None = "pg1"
    after: int = 3
    nodes: list[Node] = field(default_factory=lambda: [Node("pg0"), Node("pg1"), Node("pg2")])
    done: list[str] = field(default_factory=list)
    reads: int = 0

    def node(self, name: str) -> Node:
        return next(n for n in self.nodes if n.name == name)

    def wait_leader(self, *_: Any, **__: Any) -> str:
        return self.leader

    def lose_node(self, name: str) -> None:
        self.node(name).lost = True
        self.done.append(f"lose {name}")

    def start_node(self, name: str) -> None:
        self.node(name).lost = False
        self.done.append(f"start {name}")

    def wait_replicas(self, count: int, timeout: float) -> list[str]:
        self.done.append(f"wait {count} replicas")
        return [n.name for n in self.nodes if n.name != self.leader][:count]

    # the real polling of the leader key, over this fake's key
    wait_key_change = PatroniCluster.wait_key_change

    def leader_key(self) -> str | None:
        if not self.node(self.leader).lost:
            return self.leader
        self.reads += 1
        if self.next_leader is None or self.reads < self.after:
            return None  # the dead leader's key expired and nobody holds it yet
        return self.next_leader


def faults(cluster: FakeCluster) -> PatroniFaults:
    store = PatroniStore(Path("/nonexistent"), "db")
    store.cluster = cluster  # type: ignore[assignment]
    return PatroniFaults(store, redis=None, log=lambda _: None, down_s=0.0)  # type: ignore[arg-type]


def test_a_lost_leader_is_kept_with_the_moment_the_key_named_another_node() -> None:
    cluster = FakeCluster()
    f = faults(cluster)
    before = time.monotonic()
    f.leader_lost()
    ((label, lost_at, promoted_at),) = f.failovers
    assert label == "node"
    assert before <= lost_at < promoted_at  # three reads at 50 ms: the promotion came later
    assert cluster.reads == 3
    assert cluster.done == ["lose pg0", "start pg0", "wait 2 replicas"]  # the lost node rejoins


def test_a_leader_key_that_never_moves_fails_the_fault() -> None:
    cluster = FakeCluster(next_leader=None)
    f = faults(cluster)
    cluster.node("pg0").lost = True
    with pytest.raises(PatroniError, match="still names pg0"):
        cluster.wait_key_change("pg0", timeout=0.2)
    assert f.failovers == []


def test_a_lost_standby_is_a_failover_that_promotes_nothing() -> None:
    cluster = FakeCluster()
    f = faults(cluster)
    f.standby_lost()
    ((label, lost_at, promoted_at),) = f.failovers
    assert (label, promoted_at) == ("sync", lost_at)  # its RTO: how long the writes stopped
    assert cluster.done[0] == "lose pg1" and "start pg1" in cluster.done  # never the leader


def test_writes_that_stop_while_a_standby_is_lost_fail_the_run() -> None:
    """A standby lost at 100: a suite that answered a new transfer 201 only 16 s later
    failed "writes must go on" (the same limit as a failover's RTO)."""
    from tests.unit.test_chaos_recovery import BOOKINGS, COMMITTED

    stopped = [(100.5, 116.0, "201")]
    flowing = [(100.5, 100.7, "201")]
    assert not recovery(BOOKINGS, COMMITTED, stopped, 100.0, 100.0, 15.0, "sync").ok
    ok = recovery(BOOKINGS, COMMITTED, flowing, 100.0, 100.0, 15.0, "sync")
    assert ok.ok and ok.line().startswith("chaos-failover: sync rpo 0 detection_s 0.0 rto_s 0.7")


def test_a_whole_node_needs_three_brokers() -> None:
    f = faults(FakeCluster())
    with pytest.raises(ValueError, match="three Apache Kafka brokers"):
        f.leader_lost(with_broker=True)


def test_the_patroni_pass_plans_every_fault_between_two_kills() -> None:
    args = parse(["--patroni"])
    assert args.patroni and (args.transfers, args.kills) == (600, 2)
    assert set(args.faults.split(",")) == {"kill", *FAULTS}
    labels = [label for _, label, _ in faults(FakeCluster()).steps(set(FAULTS))]
    assert len(labels) == len(FAULTS) == 6
    assert labels[0] == "patroni: leader node lost"
    assert labels[-1].startswith("whole node lost")
    # a chosen subset plans only those
    only = faults(FakeCluster()).steps({"switchover", "valkey"})
    assert [label for _, label, _ in only] == ["patroni: switchover", "valkey lost"]


def test_the_harness_pass_is_unchanged_by_the_patroni_one() -> None:
    args = parse([])
    assert not args.patroni and args.transfers == 1000
    assert not set(args.faults.split(",")) & (set(chaos_patroni.FAULTS) - {"valkey"})

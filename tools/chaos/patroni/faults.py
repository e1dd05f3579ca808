"""The chaos run's PostgreSQL run the way platform teams run it (``make chaos``'s
``--patroni`` pass): three Patroni nodes (tools.chaos.patroni.cluster, synchronous mode with a
quorum of one) on a three-member etcd (tools.stack.etcd), with the faults a platform
team plans for, under the suite's load:

- ``node``: the leader's node lost (its Patroni agent and its PostgreSQL SIGKILLed together);
  Patroni promotes a quorum standby once the dead leader's key expires (its ``ttl``); the lost
  node's agent is started again later and rejoins as a replica (``pg_rewind``).
- ``wholenode``: the same, and at the same moment one of the three Apache Kafka brokers
  SIGKILLed (a machine that ran both), the broker started again ``down_s`` later.
- ``switchover``: a planned switchover (``POST /switchover`` on the leader).
- ``sync``: a synchronous (quorum) standby's node lost for ``down_s``: the writes must not stop.
- ``etcd``: one of the three etcd members SIGKILLed for ``down_s``: the DCS keeps its quorum
  and the leader its key.
- ``valkey``: Valkey SIGKILLed and started again empty (as tools.chaos.failover).

Each leader change is kept as ``(fault, lost_at, promoted_at)``: ``promoted_at`` is when the
leader key in etcd first names another node (the promotion's start), read from etcd itself. A
fault that must not stop the writes (``sync``, ``etcd``) is kept with ``promoted_at = lost_at``:
its "RTO" is then how long the suite went without answering a new transfer 201.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from tools.chaos.patroni.cluster import PatroniCluster, PatroniNode
from tools.chaos.stores import OwnRedis, valkey_lost
from tools.stack.etcd import EtcdCluster
from tools.stack.kafka import KafkaNode, fetch

FAULTS = ("node", "wholenode", "switchover", "sync", "etcd", "valkey")
REJOIN_S = 180.0  # a lost node's agent must be streaming again within this


class PatroniStore:
    """etcd and the Patroni cluster the suite's PostgreSQL runs on, with the face of
    :class:`tools.chaos.pg_cluster.PgCluster` that tools.chaos.scenario uses (init, url, nodes,
    primary, standbys, destroy)."""

    def __init__(self, workdir: Path, database: str) -> None:
        self.workdir, self.database = workdir, database
        self.etcd: EtcdCluster | None = None
        self.cluster: PatroniCluster | None = None

    def init(self) -> PatroniStore:
        from tools.stack import etcd as etcd_embedded

        etcd = self.etcd = etcd_embedded.cluster(self.workdir, 3)
        self.cluster = PatroniCluster(self.workdir, etcd.hosts)
        self.cluster.start()
        # The database is created here and on every replica before tools.stack.stores uses the
        # multi-host URL (a replica that has not replayed CREATE DATABASE ends a connect).
        self.cluster.create(self.database)
        return self

    @property
    def nodes(self) -> list[PatroniNode]:
        assert self.cluster is not None
        return self.cluster.nodes

    @property
    def primary(self) -> PatroniNode:
        assert self.cluster is not None
        return self.cluster.node(self.cluster.wait_leader())

    @property
    def standbys(self) -> list[PatroniNode]:
        leader = self.primary.name
        return [n for n in self.nodes if n.name != leader and not n.lost]

    def url(self) -> str:
        assert self.cluster is not None
        return self.cluster.url()

    def destroy(self) -> None:
        if self.cluster is not None:
            self.cluster.stop()
        if self.etcd is not None:
            self.etcd.stop()


@dataclass
class PatroniFaults:
    store: PatroniStore
    redis: OwnRedis
    log: Callable[[str], None]
    down_s: float = 10.0  # a lost standby, etcd member or Kafka broker stays down this long
    redis_down_s: float = 10.0
    kafka_nodes: list[KafkaNode] = field(default_factory=list)  # set once the stores run
    failovers: list[tuple[str, float, float]] = field(default_factory=list)

    @property
    def cluster(self) -> PatroniCluster:
        assert self.store.cluster is not None
        return self.store.cluster

    def leader_lost(self, with_broker: bool = False) -> None:
        old = self.cluster.wait_leader()
        broker = self._broker() if with_broker else None
        what = f" and Apache Kafka node {broker.node_id}" if broker else ""
        self.log(f"fault: the leader {old}'s node lost (Patroni agent and PostgreSQL SIGKILLed){what}")
        lost_at = time.monotonic()
        self.cluster.lose_node(old)
        if broker is not None:
            assert broker.proc is not None
            os.killpg(broker.proc.pid, signal.SIGKILL)
            broker.proc.wait(10)
        new, promoted_at = self.cluster.wait_key_change(old)
        label = "wholenode" if broker else "node"
        self.failovers.append((label, lost_at, promoted_at))
        self.log(f"{new} holds the leader key {promoted_at - lost_at:.1f} s after the loss")
        if broker is not None:
            time.sleep(max(0.0, lost_at + self.down_s - time.monotonic()))
            broker.launch(fetch())
            broker.wait_ready(120)
            self.log(f"Apache Kafka node {broker.node_id} started again")
        self._rejoin(old)

    def switchover(self) -> None:
        old = self.cluster.wait_leader()
        self.log(f"fault: planned switchover from {old} (POST /switchover)")
        asked_at = time.monotonic()
        with ThreadPoolExecutor(1) as pool:  # the key watched while the request runs
            watch = pool.submit(self.cluster.wait_key_change, old)
            new = self.cluster.switchover()
            holder, promoted_at = watch.result()
        self.failovers.append(("switchover", asked_at, promoted_at))
        self.log(f"{new} ({holder} in etcd) leads {promoted_at - asked_at:.1f} s after the request")
        self.cluster.wait_replicas(len(self.store.nodes) - 1, REJOIN_S)

    def standby_lost(self) -> None:
        leader = self.cluster.wait_leader()
        name = next(n.name for n in self.store.nodes if n.name != leader and not n.lost)
        self.log(f"fault: quorum standby {name}'s node lost for {self.down_s:.0f} s (writes go on)")
        lost_at = time.monotonic()
        self.cluster.lose_node(name)
        self.failovers.append(("sync", lost_at, lost_at))  # no failover: writes must go on
        time.sleep(self.down_s)
        self._rejoin(name)

    def etcd_member_lost(self) -> None:
        assert self.store.etcd is not None
        member = self.store.etcd.members[-1]
        self.log(f"fault: etcd member {member.name} SIGKILLed for {self.down_s:.0f} s (quorum 2 of 3)")
        lost_at = time.monotonic()
        member.kill()
        self.failovers.append(("etcd", lost_at, lost_at))  # no failover: writes must go on
        time.sleep(self.down_s)
        member.start()
        member.wait_ready(60)
        self.log(f"etcd member {member.name} started again; the leader is {self.cluster.leader()}")

    def _rejoin(self, name: str) -> None:
        started = time.monotonic()
        self.cluster.start_node(name)
        self.cluster.wait_replicas(len(self.store.nodes) - 1, REJOIN_S)
        self.log(f"{name}'s agent started again: streaming in {time.monotonic() - started:.1f} s")

    def _broker(self) -> KafkaNode:
        if len(self.kafka_nodes) < 3:
            raise ValueError("a whole node lost takes one of three Apache Kafka brokers (--brokers 3)")
        return self.kafka_nodes[len(self.failovers) % len(self.kafka_nodes)]

    def valkey(self) -> None:
        valkey_lost(self.redis, self.log, self.redis_down_s / 3)

    def steps(self, faults: set[str]) -> list[tuple[int, str, Callable[[], None]]]:
        """The chosen faults with where each goes among the others (its index in the plan)."""
        every = [
            (1, "patroni: leader node lost", "node", self.leader_lost),
            (2, "patroni: quorum standby lost", "sync", self.standby_lost),
            (3, "patroni: switchover", "switchover", self.switchover),
            (4, "etcd member lost", "etcd", self.etcd_member_lost),
            (6, "valkey lost", "valkey", self.valkey),
            (7, "whole node lost (leader + Kafka broker)", "wholenode", lambda: self.leader_lost(True)),
        ]
        return [(at, label, act) for at, label, name, act in every if name in faults]

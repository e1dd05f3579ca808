"""Broker faults for ``make chaos`` on the three-node Apache Kafka cluster.

The cluster is tools.stack.kafka's: three KRaft nodes on this machine, replication 3,
``min.insync.replicas`` 2, every producer idempotent with ``acks=all``. Three faults under the
transfers load:

- ``broker-kill``: SIGKILL one broker, start it again ``restart_after_s`` (10) later;
- ``leader-kill``: SIGKILL the leader of the ledger commands topic's busiest partition (the
  one with the most records), start it again after the same delay;
- ``broker-pause``: SIGSTOP one broker for ``pause_s`` (10), then SIGCONT: a broker that stops
  answering without closing its sockets, which clients only notice by timeouts.

Each waits until the restarted node says it started again, so the next fault never finds two
nodes down (the cluster keeps writing with two of three; with one it would refuse acks=all).
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable

from aiokafka import AIOKafkaConsumer, TopicPartition

from common.kafka import partition_leaders
from tools.stack.kafka import KafkaNode, fetch

FAULTS = ("broker-kill", "leader-kill", "broker-pause")


async def busiest_leader(bootstrap: str, topic: str) -> tuple[int, int]:
    """(partition, leader node id) of ``topic``'s partition with the most records."""
    servers = bootstrap.split(",")  # aiokafka takes a string as one address
    leaders = await partition_leaders(topic, bootstrap_servers=servers)
    if not leaders:
        raise RuntimeError(f"{topic} has no partitions")
    consumer = AIOKafkaConsumer(bootstrap_servers=servers)
    await consumer.start()
    try:
        ends = await consumer.end_offsets([TopicPartition(topic, p) for p in leaders])
    finally:
        await consumer.stop()
    partition = max(leaders, key=lambda p: (ends.get(TopicPartition(topic, p), 0), -p))
    return partition, int(leaders[partition])


class BrokerFaults:
    """The three broker faults, on the nodes a :class:`~tools.stack.stores.Stores` started."""

    def __init__(
        self,
        nodes: list[KafkaNode],
        topic: str,
        log: Callable[[str], None],
        restart_after_s: float = 10.0,
        pause_s: float = 10.0,
    ) -> None:
        if len(nodes) < 3:
            raise ValueError("broker faults need the three-node cluster (--brokers 3)")
        self.nodes, self.topic, self.log = nodes, topic, log
        self.restart_after_s, self.pause_s = restart_after_s, pause_s
        self.turn = 0
        self.bootstrap = ",".join(n.address for n in nodes)

    def steps(self, faults: set[str]) -> list[tuple[str, Callable[[], None]]]:
        act = {"broker-kill": self.kill_one, "leader-kill": self.kill_leader, "broker-pause": self.pause_one}
        return [(name, act[name]) for name in FAULTS if name in faults]

    def _next(self) -> KafkaNode:
        node = self.nodes[self.turn % len(self.nodes)]
        self.turn += 1
        return node

    def _kill_and_restart(self, node: KafkaNode, why: str) -> None:
        assert node.proc is not None
        self.log(f"fault: SIGKILL Apache Kafka node {node.node_id} ({why}, pid {node.proc.pid})")
        os.killpg(node.proc.pid, signal.SIGKILL)
        node.proc.wait(10)
        time.sleep(self.restart_after_s)
        started = time.monotonic()
        node.launch(fetch())
        node.wait_ready(120)
        self.log(
            f"Apache Kafka node {node.node_id} restarted, ready after {time.monotonic() - started:.1f} s"
        )

    def kill_one(self) -> None:
        self._kill_and_restart(self._next(), "a broker")

    def kill_leader(self) -> None:
        partition, leader = asyncio.run(busiest_leader(self.bootstrap, self.topic))
        node = next(n for n in self.nodes if n.node_id == leader)
        self._kill_and_restart(node, f"leader of {self.topic}[{partition}], its busiest partition")

    def pause_one(self) -> None:
        node = self._next()
        assert node.proc is not None
        self.log(f"fault: SIGSTOP Apache Kafka node {node.node_id} for {self.pause_s:.0f} s")
        os.killpg(node.proc.pid, signal.SIGSTOP)
        try:
            time.sleep(self.pause_s)
        finally:
            os.killpg(node.proc.pid, signal.SIGCONT)
        self.log(f"Apache Kafka node {node.node_id} resumed (SIGCONT)")

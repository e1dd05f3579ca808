"""The chaos run's store faults: PostgreSQL as a primary with two synchronous
standbys (tools.chaos.pg_cluster) and a Valkey without persistence (tools.chaos.stores).

- ``pg``: the primary stopped (``pg_ctl stop -m fast``), started again after a while.
- ``standby``: a synchronous standby SIGKILLed, started again after a while: with
  ``ANY 1`` of the standbys, the writes must not stop.
- ``failover``: the primary SIGKILLed (a lost node); ``detect_s`` later the harness promotes
  the standby that received the most WAL and re-points the other at it, then rebuilds the lost
  node as a standby. Each failover's loss and promotion times are kept for the recovery
  objectives (``chaos_audit.recovery``).
- ``hang``: the same failover with the primary hung instead of lost (SIGSTOP of its processes:
  connections reach it and nothing answers); it stays hung ``down_s`` after the promotion, then
  the harness fences it (SIGKILL) and rebuilds it as a standby.
- ``redis``: Valkey paused (SIGSTOP, then SIGCONT).
- ``valkey``: Valkey SIGKILLed and started again empty: what the gateway caches there (key
  records, tenants, idempotency leases) is rebuilt from PostgreSQL.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from tools.chaos.pg_cluster import ClusterError, PgCluster
from tools.chaos.stores import OwnRedis, valkey_lost

FAULTS = ("pg", "standby", "failover", "hang", "redis", "valkey")


@dataclass
class StoreFaults:
    cluster: PgCluster
    redis: OwnRedis
    log: Callable[[str], None]
    down_s: float = 10.0  # a stopped primary or a lost standby stays down this long
    redis_down_s: float = 10.0  # Valkey paused this long; killed: restarted after a third of it
    detect_s: float = 5.0  # from the primary's loss to the promotion's start
    failovers: list[tuple[str, float, float]] = field(default_factory=list)  # (fault, lost, promoted)

    def primary_stop(self) -> None:
        name = self.cluster.primary_name
        self.log(f"fault: PostgreSQL primary {name} stopped for {self.down_s:.0f} s")
        self.cluster.stop(name)
        time.sleep(self.down_s)
        self.cluster.restart(name)
        self.log(f"PostgreSQL primary {name} started again")

    def standby_lost(self) -> None:
        name = self.cluster.standbys[-1].name
        self.log(f"fault: synchronous standby {name} SIGKILLed for {self.down_s:.0f} s (writes go on)")
        lost_at = time.monotonic()
        self.cluster.kill(name)
        self.failovers.append(("standby", lost_at, lost_at))  # no failover: writes must go on
        time.sleep(self.down_s)
        self.cluster.restart(name)
        self.log(f"standby {name} started again: {self._streaming()}")

    def failover(self, hang: bool = False) -> None:
        old = self.cluster.primary_name
        how = "hung (SIGSTOP)" if hang else "SIGKILLed"
        self.log(f"fault: PostgreSQL primary {old} {how}; the harness promotes in {self.detect_s:.0f} s")
        lost_at = time.monotonic()
        if hang:
            self.cluster.pause(old)
        else:
            self.cluster.kill(old)
        time.sleep(self.detect_s)
        promoted_at = time.monotonic()
        new, repointed = self.cluster.failover()
        self.failovers.append(("hang" if hang else "failover", lost_at, promoted_at))
        self.log(
            f"{new} promoted and {', '.join(repointed) or 'no standby'} re-pointed in"
            f" {time.monotonic() - promoted_at:.2f} s"
        )
        try:
            self.cluster.wait_synchronous(1, timeout=30)
            took = time.monotonic() - promoted_at
            self.log(f"{new} has a synchronous standby {took:.2f} s after the promotion")
        except ClusterError as exc:
            self.log(f"no synchronous standby yet: {exc}")
        if hang:
            time.sleep(self.down_s)
            self.cluster.kill(old)  # fenced: it never answers again as a primary
            self.log(f"{old} fenced (SIGKILL) {time.monotonic() - promoted_at:.1f} s after the promotion")
        self.cluster.rebuild(old)
        self.log(f"{old} rebuilt as a standby of {new}: {self._streaming()}")

    def redis_pause(self) -> None:
        self.log(f"fault: Redis paused (SIGSTOP) for {self.redis_down_s:.0f} s")
        self.redis.pause()
        time.sleep(self.redis_down_s)
        self.redis.resume()
        self.log("Redis resumed")

    def valkey_lost(self) -> None:
        valkey_lost(self.redis, self.log, self.redis_down_s / 3)

    def steps(self, faults: set[str]) -> list[tuple[int, str, Callable[[], None]]]:
        """The chosen faults with where each goes among the others (its index in the plan)."""
        every = [
            (2, "pg stop", "pg", self.primary_stop),
            (4, "pg standby lost", "standby", self.standby_lost),
            (5, "redis pause", "redis", self.redis_pause),
            (7, "pg failover", "failover", self.failover),
            (11, "pg failover (hung primary)", "hang", lambda: self.failover(hang=True)),
            (9, "valkey lost", "valkey", self.valkey_lost),
        ]
        return [(at, label, act) for at, label, name, act in every if name in faults]

    def _streaming(self) -> str:
        try:
            return (
                ", ".join(f"{k} {v}" for k, v in sorted(self.cluster.streaming().items())) or "none streaming"
            )
        except ClusterError as exc:
            return f"unknown ({exc})"

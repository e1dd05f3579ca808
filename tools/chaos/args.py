"""``python -m tools.chaos.scenario``'s arguments: the faults, their timings and the load, and the
variants (``--short`` for make test, ``--scale``, ``--patroni``)."""

from __future__ import annotations

import argparse

from tools.chaos import scale as chaos_scale
from tools.chaos.failover import FAULTS as STORE_FAULTS
from tools.chaos.kafka import FAULTS as BROKER_FAULTS
from tools.chaos.patroni.faults import FAULTS as PATRONI_FAULTS

KILL_ORDER = ("gateway", "ledger", "compliance", "webhooks", "admin")


def parse(argv: list[str], description: str = "") -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m tools.chaos.scenario", description=description)
    ap.add_argument(
        "--short",
        action="store_true",
        help="150 transfers, one ledger SIGKILL, a 5 s PostgreSQL stop, a standby lost, a failover",
    )
    ap.add_argument(
        "--scale",
        action="store_true",
        help="no faults: ledger and compliance grow from 1 to 3 instances and back, a gateway is added"
        " and removed, during the load (tools.chaos.scale)",
    )
    ap.add_argument(
        "--patroni",
        action="store_true",
        help="PostgreSQL failed over by Patroni on a three-member etcd (tools.chaos.patroni.faults):"
        " the leader's node lost, a quorum standby lost, a switchover, an etcd member lost, Valkey"
        " lost, a whole node (PostgreSQL leader and a Kafka broker) lost; 600 transfers, 2 kills",
    )
    ap.add_argument("--transfers", type=int, default=1000)
    ap.add_argument("--clients", type=int, default=24)
    ap.add_argument("--wallets", type=int, default=20)
    ap.add_argument(
        "--faults",
        default=",".join(("kill", *STORE_FAULTS, *BROKER_FAULTS)),
        help=f"comma-separated: kill, {', '.join(STORE_FAULTS + BROKER_FAULTS)} ('' = none); with"
        f" --patroni: kill, {', '.join(PATRONI_FAULTS)}",
    )
    ap.add_argument("--brokers", type=int, default=3, help="Apache Kafka nodes (broker faults need 3)")
    ap.add_argument("--kills", type=int, default=6)
    ap.add_argument("--kill-only", default="", choices=["", *KILL_ORDER], help="kill only this service type")
    ap.add_argument("--restart-after-s", type=float, default=3.0)
    ap.add_argument("--pg-stop-s", type=float, default=10.0)
    ap.add_argument("--redis-pause-s", type=float, default=10.0)
    ap.add_argument(
        "--failover-detect-s", type=float, default=5.0, help="from the primary's loss to the promotion"
    )
    ap.add_argument(
        "--rto-limit-s", type=float, default=15.0, help="a failover's RTO above this fails the run"
    )
    ap.add_argument(
        "--pg-single-host",
        action="store_true",
        help="negative control: the services are given only the first primary's address",
    )
    ap.add_argument(
        "--deadline-s", type=float, default=180.0, help="a transfer undecided after this is undecided"
    )
    ap.add_argument("--webhook-grace-s", type=float, default=120.0)
    ap.add_argument(
        "--slow-s", type=float, default=0.0, help="a decision later than this is slow (0: 3/4 of deadline)"
    )
    args = ap.parse_args(argv)
    if args.patroni:
        if args.faults == ap.get_default("faults"):
            args.faults = ",".join(("kill", *PATRONI_FAULTS))
        if args.transfers == ap.get_default("transfers"):
            args.transfers = 600
        if args.kills == ap.get_default("kills"):
            args.kills = 2
    if args.scale:
        args.faults, args.slow_s, args.brokers = "", chaos_scale.SLOW_S, 1
    if args.short:
        args.transfers, args.kills, args.kill_only, args.brokers = 150, 1, "ledger", 1
        if not args.scale and args.faults == ap.get_default("faults"):
            args.faults = "kill,pg,standby,failover"
        elif args.scale:
            args.faults = ""
        args.pg_stop_s, args.deadline_s, args.webhook_grace_s = 5.0, 60.0, 30.0
    return args

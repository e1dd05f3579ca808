"""Run seeds of the deterministic simulation (see :mod:`tests.simulation.world`).

``Simulation`` owns one database for a run (created and migrated once, emptied before each
seed). ``run_seed`` returns the first violations found with the step that found them; the same
seed and steps replay the same run exactly:

    make simulate SIMULATE_SEED=1234 SIMULATE_STEPS=60
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

import asyncpg

from common import authority, failpoints
from common.failpoints import FailpointCrash
from common.settings import Settings
from tests.simulation.checks import end_violations, step_violations
from tests.simulation.net import Net
from tests.simulation.world import DAILY_CAP, FAULT_FREE, FAULTS, REPLIES, Client, Engine, Services
from tests.support.db import pg_connect
from tools.stack.stores import create_database, drop_database

ROOT = Path(__file__).resolve().parents[2]


def replay_command(seed: int, steps: int) -> str:
    return f"make simulate SIMULATE_SEED={seed} SIMULATE_STEPS={steps}"


# Compliance signs what it approves and the ledger verifies it, as in the suite (15.1).
AUTHORITY = authority.new_settings("sim")


@dataclass
class Outcome:
    seed: int
    steps: int
    violations: list[str] = field(default_factory=list)
    at_step: int | None = None  # None: found at the end
    crashes: int = 0
    commands: int = 0

    @property
    def ok(self) -> bool:
        return not self.violations

    def line(self) -> str:
        where = "at the end" if self.at_step is None else f"after step {self.at_step}"
        return (
            f"seed {self.seed}: {len(self.violations)} violations {where}: {self.violations[:3]}"
            f"; replay: {replay_command(self.seed, self.steps)}"
        )


class Simulation:
    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.url = ""
        self.engine: Engine | None = None
        self.db: asyncpg.Connection | None = None
        self.tables: list[str] = []
        self.snapshot = False

    async def __aenter__(self) -> Simulation:
        name = f"sluice_sim_{uuid.uuid4().hex[:10]}"
        self.url = await asyncio.to_thread(create_database, self.base_url, name)
        env = {"SLUICE_DATABASE_URL": self.url, "SLUICE_ENV": "development", "PATH": "/usr/bin:/bin"}
        await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "sluice", "migrate"],
            env={**env, "PYTHONPATH": f"{ROOT}/libs:{ROOT}/services"},
            check=True,
            cwd=ROOT,
            capture_output=True,
        )
        self.engine = Engine(self.url)
        self.db = await pg_connect(self.url)
        rows = await self.db.fetch(
            "SELECT schemaname || '.' || tablename AS t FROM pg_tables"
            " WHERE schemaname IN ('ledger', 'compliance') AND tablename <> 'alembic_version'"
        )
        self.tables = sorted(r["t"] for r in rows)
        for name in (
            "common.consume",
            "common.failpoints",
            "common.outbox",
            "ledger",
            "compliance",
            "common",
        ):
            logging.getLogger(name).setLevel(int(os.environ.get("SIMULATE_LOG", logging.CRITICAL)))
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.db is not None:
            await self.db.close()
        if self.engine is not None:
            await self.engine.engine.dispose()
        await asyncio.to_thread(drop_database, self.url)

    async def run_seed(self, seed: int, steps: int = 60) -> Outcome:
        assert self.engine is not None and self.db is not None
        await self.db.execute(f"TRUNCATE {', '.join(self.tables)}")
        rng = random.Random(seed)  # noqa: S311 - a simulation's choices, not secrets
        failpoints.configure(FAULT_FREE)
        failpoints.seed(seed)
        net = Net(rng)
        settings = Settings(
            env="development",
            topic_prefix="sim",
            sandbox_default_cap=DAILY_CAP,
            **{k[len("SLUICE_") :].lower(): v for k, v in AUTHORITY.items()},  # type: ignore[arg-type]
        )
        svc = Services(settings, self.engine.sessions, net)
        client = Client(rng, net, svc.topics, admin=settings.signing_key("admin"))
        out = Outcome(seed, steps)
        layers = client.setup()
        if self.snapshot:
            await self._restore()
        else:
            for layer in layers:
                for cmd in layer:
                    client.send(cmd)
                await self._drain(svc, net, rng)
            await self._save()
        client.issued.clear()  # the set-up is the same for every seed, checked once, without faults
        failpoints.configure(FAULTS)
        for step in range(steps):
            await self._step(svc, net, client, rng)
            found = await step_violations(self.db, DAILY_CAP, self._dead(svc, net))
            if found:
                out.violations, out.at_step = found, step
                break
        failpoints.configure(FAULT_FREE)
        if out.ok:
            await self._drain(svc, net, rng)
            found = await step_violations(self.db, DAILY_CAP, self._dead(svc, net))
            found += await end_violations(
                self.db,
                client.issued,
                [m.value or b"" for m in net.history.get(REPLIES, [])],
                [m.value or b"" for m in net.history.get(svc.topics.events, [])],
            )
            out.violations = found
        out.crashes = sum(svc.crashes.values())
        out.commands = len(client.issued)
        return out

    async def _save(self) -> None:
        """Keep the set-up (the same for every seed) to restore it before the next seed."""
        assert self.db is not None
        await self.db.execute("DROP SCHEMA IF EXISTS sim_setup CASCADE; CREATE SCHEMA sim_setup")
        for t in self.tables:
            await self.db.execute(f"CREATE TABLE sim_setup.{t.replace('.', '__')} AS TABLE {t}")
        self.snapshot = True

    async def _restore(self) -> None:
        """Foreign keys and triggers off (a replica's role) while the set-up's rows go back."""
        assert self.db is not None
        copies = "; ".join(
            f"INSERT INTO {t} SELECT * FROM sim_setup.{t.replace('.', '__')}" for t in self.tables
        )
        await self.db.execute(
            f"SET session_replication_role = replica; {copies}; SET session_replication_role = origin"
        )

    @staticmethod
    def _dead(svc: Services, net: Net) -> list[bytes]:
        return [m.value or b"" for m in net.history.get(svc.topics.dead_letters, [])]

    async def _step(self, svc: Services, net: Net, client: Client, rng: random.Random) -> None:
        action = rng.choices(
            ["deposit", "transfer", "payout", "again", "deliver", "relay", "settle"],
            weights=[3, 4, 2, 1, 10, 1, 2],
        )[0]
        if action == "deposit":
            client.deposit()
        elif action in ("transfer", "payout"):
            client.transfer(action)
        elif action == "again":
            client.again()
        else:
            await self._service_step(svc, net, rng, action)

    async def _service_step(self, svc: Services, net: Net, rng: random.Random, action: str) -> None:
        service = "ledger"
        try:
            if action == "relay":
                if rng.random() < 0.5:
                    await svc.outbox.relay_once(svc.sessions)
                else:
                    service = "compliance"
                    await svc.compliance_outbox.relay_once(svc.sessions)
            elif action == "settle":
                await svc.simulator.step_once()
            else:
                busy = [c for c in svc.consumers() if net.pending(c[1])]
                if not busy:
                    return
                service, topic, processor = rng.choice(busy)
                batch = net.take(topic, 6, shuffle=True)
                await processor(batch)
                net.commit(topic, batch, keep_share=0.1)
        except FailpointCrash:
            svc.crashed(service)

    async def _drain(self, svc: Services, net: Net, rng: random.Random) -> None:
        """Deliver everything (in order, faults as configured) and settle every transfer."""
        for _ in range(10_000):
            moved = False
            for service, topic, processor in svc.consumers():
                batch = net.take(topic, 20, shuffle=False)
                if batch:
                    moved = True
                    try:
                        await processor(batch)
                        net.commit(topic, batch)
                    except FailpointCrash:
                        svc.crashed(service)
            if moved:
                continue  # settle only once every queue is empty
            try:
                moved = bool(await svc.compliance_outbox.relay_once(svc.sessions))
            except FailpointCrash:
                svc.crashed("compliance")
                moved = True
            if moved:
                continue
            try:
                moved = bool(await svc.outbox.relay_once(svc.sessions)) or bool(
                    await svc.simulator.step_once()
                )
            except FailpointCrash:
                svc.crashed("ledger")
                moved = True
            if not moved:
                return
        raise RuntimeError("the simulation did not settle in 10,000 rounds")


def summary(outcomes: list[Outcome], cap: Decimal = DAILY_CAP) -> str:
    bad = [o for o in outcomes if not o.ok]
    return (
        f"simulate: seeds {len(outcomes)} violations {len(bad)} commands {sum(o.commands for o in outcomes)}"
        f" crashes {sum(o.crashes for o in outcomes)} (daily cap {cap})"
    )

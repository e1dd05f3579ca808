"""One seed of the deterministic simulation: the ledger's and compliance's real runtimes on a
real PostgreSQL, their broker replaced by :class:`tests.simulation.net.Net`.

A seed sets up two tenants (customers, wallets, virtual accounts, approved external
accounts), then takes ``steps`` random steps: a client issues a deposit, a book transfer or a
payout, or sends an earlier command again; a consumer is handed a random batch of its pending
records in any order (a batch it finishes is committed, but a record may stay pending and come
again); an outbox relay (the ledger's or compliance's) or the sandbox simulator runs.
Faults come from the named failpoints, fired on a share of their hits drawn from the seed: a
crash at any SQL statement (``db.statement``), just before a record is published
(``sim.publish``) or between the ledger's commit and its dispatch (``ledger.after_commit``).
A crashed service loses its memory and starts again; its transaction is rolled back and its
records are delivered again. The invariants (:mod:`tests.simulation.checks`) are checked
after every step and, once every record is delivered and every transfer settled, the end
state is checked too.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, TypeVar

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from common import failpoints
from common.authority import SigningKey
from common.consume import BatchProcessor
from common.contracts import Command, encode
from common.contracts.base import Ctx
from common.contracts.commands import (
    CreateCustomer,
    CreateTransfer,
    CreateVirtualAccount,
    CreateWallet,
    Party,
    SandboxDeposit,
    UpsertExternalAccount,
    VADestination,
    partition_key,
)
from common.db import create_engine, sessionmaker
from common.outbox import Outbox
from common.settings import Settings
from common.topics import Topics
from compliance.handlers import ComplianceConsumer, operator_signed
from ledger.config import LedgerConfig
from ledger.handlers import LedgerConsumer
from ledger.simulator import Simulator
from tests.simulation.net import Net, sim_broker

log = logging.getLogger(__name__)

REPLIES = "sim.replies.client"  # a reply topic of the prefix "sim" (common.replies)
C = TypeVar("C", bound=Command)
TENANTS = ("t-a", "t-b")
WALLETS_PER_TENANT = 3
DAILY_CAP = Decimal("900")  # low enough that the load meets it
FAULTS = "db.statement=2%crash;sim.publish=3%crash;ledger.after_commit=10%crash"
FAULT_FREE = ""


@dataclass
class Wallet:
    tenant: str
    customer_id: str
    wallet_id: str
    va_id: str
    ext_id: str


class Engine:
    """One engine for the whole run; every SQL statement is a failpoint hit."""

    def __init__(self, database_url: str) -> None:
        self.engine: AsyncEngine = create_engine(database_url, 2)
        self.sessions: async_sessionmaker[AsyncSession] = sessionmaker(self.engine)
        event.listen(self.engine.sync_engine, "before_cursor_execute", _statement)


def _statement(*_: Any) -> None:
    failpoints.hit("db.statement")


@dataclass
class Services:
    """The ledger and compliance as one process each would hold them: rebuilt after a crash."""

    settings: Settings
    sessions: async_sessionmaker[AsyncSession]
    net: Net
    topics: Topics = field(default_factory=lambda: Topics("sim"))
    crashes: dict[str, int] = field(default_factory=lambda: {"ledger": 0, "compliance": 0})

    def __post_init__(self) -> None:
        self.broker = sim_broker(self.net)
        self.start_ledger()
        self.start_compliance()

    def start_ledger(self) -> None:
        ledger_config = LedgerConfig(settle_s=0)
        self.outbox = Outbox("ledger", self.broker, grace_s=0, lazy_delete=True, answers_from_inbox=True)
        self.ledger = LedgerConsumer(
            self.settings,
            self.broker,
            self.sessions,
            self.outbox,
            self.topics,
            ledger_config=ledger_config,
        )
        self.ledger_commands = self.ledger.processor()
        self.simulator = Simulator(
            self.sessions, self.outbox, self.topics, ledger_config, self.ledger.signing_key
        )

    def start_compliance(self) -> None:
        self.compliance_outbox = Outbox("compliance", self.broker, grace_s=0, lazy_delete=True)
        self.compliance = ComplianceConsumer(
            self.settings, self.broker, self.sessions, self.topics, self.compliance_outbox
        )
        self.compliance_commands = self.compliance.processor()
        self.usage = self.compliance.usage_processor()
        self.releases = self.compliance.releases_processor()

    def consumers(self) -> list[tuple[str, str, BatchProcessor[Any]]]:
        t = self.topics
        return [
            ("ledger", t.ledger_commands, self.ledger_commands),
            ("compliance", t.compliance_commands, self.compliance_commands),
            ("compliance", t.events, self.usage),
            ("compliance", t.compliance_releases, self.releases),
        ]

    def crashed(self, service: str) -> None:
        self.crashes[service] += 1
        if service == "ledger":
            self.start_ledger()
        else:
            self.start_compliance()


@dataclass
class Client:
    """The gateway's side: issues commands to compliance, sends some again."""

    rng: random.Random
    net: Net
    topics: Topics
    wallets: list[Wallet] = field(default_factory=list)
    issued: dict[str, Command] = field(default_factory=dict)
    n: int = 0
    admin: SigningKey | None = None  # signs the policy commands, as admin does (15.1)

    def ctx(self, tenant: str) -> Ctx:
        self.n += 1
        return Ctx(request_id=f"req{self.n}", tenant_id=tenant, mode="sandbox", reply_to=REPLIES)

    def head(self, tenant: str) -> dict[str, Any]:
        """A new command's id and context; the step's ids below use the ``self.n`` it sets (keyword
        arguments are evaluated in order, so spread it first)."""
        ctx = self.ctx(tenant)
        return {"command_id": f"c{self.n}", "ctx": ctx}

    def send(self, cmd: Command) -> None:
        if operator_signed(cmd) and self.admin is not None:
            cmd = self.admin.sign(cmd)
        self.issued[cmd.command_id] = cmd
        key = partition_key(cmd).encode()
        self.net.put(self.topics.compliance_commands, encode(cmd), key, [])

    def own(self, w: Wallet, kind: Callable[..., C], **fields: Any) -> C:
        """A set-up command of ``w``'s customer (one of each kind per customer)."""
        fields.setdefault("customer_id", w.customer_id)
        return kind(command_id=f"c_{kind.__name__}_{w.customer_id}", ctx=self.ctx(w.tenant), **fields)

    def setup(self) -> list[list[Command]]:
        """Layers of set-up commands: each layer needs the one before it decided."""
        customers: list[Command] = []
        wallets: list[Command] = []
        accounts: list[Command] = []
        for t in TENANTS:
            for i in range(WALLETS_PER_TENANT):
                w = Wallet(t, f"cus_{t}_{i}", f"wal_{t}_{i}", f"va_{t}_{i}", f"ext_{t}_{i}")
                self.wallets.append(w)
                customers.append(
                    self.own(
                        w,
                        CreateCustomer,
                        account_type="individual",
                        email="sim@example.com",
                        country_code="US",
                        service_user_id=w.customer_id,
                        full_name="Sim Ulation",
                    )
                )
                wallets.append(self.own(w, CreateWallet, wallet_id=w.wallet_id, symbol="USDC", chain="ETH"))
                wallets.append(
                    self.own(
                        w,
                        UpsertExternalAccount,
                        external_account_id=w.ext_id,
                        rail="ach",
                        currency="USD",
                        approved=True,
                        account_number="000123456789",
                        routing_number="021000021",
                    )
                )
                to_wallet = VADestination(
                    rail="provider_wallet", currency="USDC", provider_wallet_id=w.wallet_id
                )
                accounts.append(
                    self.own(
                        w,
                        CreateVirtualAccount,
                        virtual_account_id=w.va_id,
                        currency="USD",
                        destination=to_wallet,
                    )
                )
        return [customers, wallets, accounts]

    def amount(self, low: int, high: int, *, magic: bool = False) -> str:
        """An amount in cents; a payout's cents may ask the sandbox to fail (.51) or return it (.52)."""
        units = self.rng.randint(low, high)
        cents = self.rng.choice([51, 52, 0, 25]) if magic else self.rng.randint(0, 99)
        if not magic and cents in (51, 52):
            cents = 50
        return f"{units}.{cents:02d}"

    def deposit(self) -> None:
        w = self.rng.choice(self.wallets)
        self.send(
            SandboxDeposit(
                **self.head(w.tenant),
                deposit_id=f"dep{self.n}",
                virtual_account_id=w.va_id,
                amount=self.amount(50, 400),
            )
        )

    def transfer(self, kind: str) -> None:
        src = self.rng.choice(self.wallets)
        amount = self.amount(1, 250, magic=kind == "payout")
        if kind == "payout":
            to = Party(payment_rail="ach", currency="USD", external_account_id=src.ext_id)
        else:
            dst = self.rng.choice([w for w in self.wallets if w.tenant == src.tenant and w is not src])
            to = Party(payment_rail="provider_wallet", currency="USDC", provider_wallet_id=dst.wallet_id)
        self.send(
            CreateTransfer(
                **self.head(src.tenant),
                transfer_id=f"{'po' if kind == 'payout' else 'tr'}{self.n}",
                kind="payout" if kind == "payout" else "transfer",
                source=Party(
                    payment_rail="provider_wallet",
                    currency="USDC",
                    amount=amount,
                    provider_wallet_id=src.wallet_id,
                ),
                destination=to,
                amount=amount,
                currency="USDC",
                idempotency_key=f"idem{self.n}",
            )
        )

    def again(self) -> None:
        """A caller's retry: the same command (same id) sent again."""
        money = [c for c in self.issued.values() if isinstance(c, CreateTransfer | SandboxDeposit)]
        if money:
            self.send(self.rng.choice(money))

"""What one batch needs to know, read from PostgreSQL inside the batch's transaction (in its
first statement: :meth:`Snapshot.wanted`, ``repository.read_batch``, :meth:`Snapshot.absorb`).

Nothing outlives the batch, so a policy change committed before a batch is seen by every
command in it (no cache to invalidate across instances). The batch's own changes (parties
it registers, policy commands it applies) are visible to the commands after them.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from common import addresses
from common.contracts.commands import (
    CreateTransfer,
    CreateVirtualAccount,
    CreateWallet,
    SandboxDeposit,
    UpsertExternalAccount,
)
from compliance import repository as repo
from compliance.allowance import Claim, UsageKey
from compliance.rules import Cap, ExternalAccount

Key = tuple[str, str, str]
TenantMode = tuple[str, str]


@dataclass(frozen=True)
class PartyRow:
    kind: str
    customer_id: str | None
    country: str | None


class Snapshot:
    def __init__(self, sandbox_default_cap: Decimal) -> None:
        self.sandbox_default_cap = sandbox_default_cap
        self.parties: dict[Key, PartyRow] = {}
        self.external: dict[Key, ExternalAccount] = {}
        self.routes: dict[TenantMode, set[tuple[str, str]]] = {}
        self.caps: dict[TenantMode, Cap | None] = {}
        self.new_parties: list[tuple[str, str, str, str, str | None, str | None]] = []
        self.claims: list[Claim] = []
        self.screened: dict[str, set[str]] = {}  # compared address -> chains it is screened on
        self.day = datetime.now(UTC).date()  # the UTC day whose cap the batch's transfers take
        self.usage: dict[UsageKey, Decimal] = {}  # cap usage rows the batch locked, their totals
        # tenants enabled for production, read from admin's record (identity.tenants), never
        # from what the gateway stamps on a command
        self.live: set[str] = set()

    # ---- loading ----
    def wanted(self, cmds: Sequence[Any]) -> repo.Wanted:
        """What the batch's first statement reads for ``cmds`` (:func:`repo.read_batch`): the
        command ids to find decided, what they name, and their transfers' cap usage rows."""
        w = repo.Wanted()
        for cmd in cmds:
            t, m = cmd.ctx.tenant_id, cmd.ctx.mode
            w.command_ids.add(cmd.command_id)
            with contextlib.suppress(ValueError):  # a tenant that is no UUID has no identity row
                w.every_tenant.add(uuid.UUID(t))
            if isinstance(cmd, CreateWallet | CreateVirtualAccount | UpsertExternalAccount):
                w.parties.add((t, m, cmd.customer_id))
            elif isinstance(cmd, SandboxDeposit):
                w.parties.add((t, m, cmd.virtual_account_id))
            elif isinstance(cmd, CreateTransfer):
                w.transfer_ids.add(cmd.transfer_id)
                w.tenants.add((t, m))
                w.usage.add((t, m, cmd.currency.upper(), self.day))
                for side in (cmd.source, cmd.destination):
                    for pid in (side.provider_wallet_id, side.customer_id):
                        if pid:
                            w.parties.add((t, m, pid))
                if cmd.destination.external_account_id:
                    w.external.add((t, m, cmd.destination.external_account_id))
                if cmd.destination.address:
                    w.addresses.add(addresses.normalized(cmd.destination.address))
        return w

    def absorb(self, read: repo.BatchRead, wanted: repo.Wanted) -> None:
        """Take in what the batch's first statement read (see :meth:`wanted`)."""
        for chain, address in read.screened:
            self.screen(chain, address)
        for ea in read.external:
            self._remember_external(ea)
        for p in read.parties:
            self.parties[(p.tenant_id, p.mode, p.party_id)] = PartyRow(p.kind, p.customer_id, p.country_code)
        for tm in wanted.tenants:
            self.routes[tm] = set()
            self.caps[tm] = None
        for tenant_id, mode, rail, currency in read.routes:
            self.routes[(tenant_id, mode)].add((rail, currency))
        for tenant_id, mode, per_transfer, daily, review in read.caps:
            self.caps[(tenant_id, mode)] = Cap(
                Decimal(per_transfer), Decimal(daily), None if review is None else Decimal(review), "tenant"
            )
        self.usage.update(read.usage)
        self.live |= read.live

    def screen(self, chain: str, address: str) -> None:
        self.screened.setdefault(address, set()).add(chain)

    def unscreen(self, chain: str, address: str) -> None:
        self.screened.get(address, set()).discard(chain)

    def screened_on(self, address: str, chain: str | None) -> bool:
        """Whether ``address`` is screened on ``chain`` (on any chain when it is unknown)."""
        chains = self.screened.get(addresses.normalized(address), set())
        return bool(chains) if chain is None else chain.upper() in chains

    async def _load_tenants(self, session: AsyncSession, tenants: set[TenantMode]) -> None:
        missing = sorted(tm for tm in tenants if tm not in self.caps)
        if not missing:
            return
        for tm in missing:
            self.routes[tm] = set()
            self.caps[tm] = None
        for row in await repo.load_routes(session, missing):
            self.routes[(row.tenant_id, row.mode)].add((row.rail, row.currency))
        for row in await repo.load_caps(session, missing):
            self.caps[(row.tenant_id, row.mode)] = Cap(
                Decimal(row.per_transfer),
                Decimal(row.daily),
                None if row.review_threshold is None else Decimal(row.review_threshold),
                "tenant",
            )

    def _remember_external(self, row: Any) -> None:
        self.external[(row.tenant_id, row.mode, row.id)] = ExternalAccount(
            row.id, row.customer_id, row.rail, row.currency, bool(row.approved)
        )

    # ---- reading ----
    def party(self, tenant_id: str, mode: str, party_id: str | None) -> PartyRow | None:
        return self.parties.get((tenant_id, mode, party_id)) if party_id else None

    def country_of(self, tenant_id: str, mode: str, party_id: str | None) -> str | None:
        """A party's country: its own (customers) or its customer's (wallets, accounts)."""
        p = self.party(tenant_id, mode, party_id)
        if p is None:
            return None
        if p.country:
            return p.country
        owner = self.party(tenant_id, mode, p.customer_id) if p.customer_id != party_id else None
        return owner.country if owner else None

    def external_account(self, tenant_id: str, mode: str, ea_id: str | None) -> ExternalAccount | None:
        return self.external.get((tenant_id, mode, ea_id)) if ea_id else None

    async def policy(
        self, session: AsyncSession, tenant_id: str, mode: str
    ) -> tuple[set[tuple[str, str]], Cap | None]:
        """Approved routes and the cap (the sandbox default when the tenant set none)."""
        await self._load_tenants(session, {(tenant_id, mode)})
        cap = self.caps[(tenant_id, mode)]
        if cap is None and mode == "sandbox":
            d = self.sandbox_default_cap
            cap = Cap(d, d, None, "sandbox_default")
        return self.routes[(tenant_id, mode)], cap

    # ---- the batch's own changes ----
    def register(
        self,
        tenant_id: str,
        mode: str,
        party_id: str,
        kind: str,
        customer_id: str | None,
        country: str | None = None,
    ) -> None:
        key = (tenant_id, mode, party_id)
        if key in self.parties:  # first record wins, as in the table
            return
        self.parties[key] = PartyRow(kind, customer_id, country)
        self.new_parties.append((tenant_id, mode, party_id, kind, customer_id, country))

    def forget_policy(self, tenant_id: str, mode: str) -> None:
        """A policy command changed this tenant: later commands re-read it (same transaction)."""
        self.routes.pop((tenant_id, mode), None)
        self.caps.pop((tenant_id, mode), None)

    def remember_external(self, row: Any) -> None:
        self._remember_external(row)

    def claim(self, claim: Claim) -> None:
        """A transfer that passed every rule but the daily cap: settled for the whole batch."""
        self.claims.append(claim)

    def take_claims(self) -> list[Claim]:
        claims, self.claims = self.claims, []
        return claims

    def take_parties(self) -> list[tuple[str, str, str, str, str | None, str | None]]:
        """The parties the batch registered, for its write statement."""
        new, self.new_parties = self.new_parties, []
        return new

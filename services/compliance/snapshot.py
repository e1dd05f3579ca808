"""What one batch needs to know, read from PostgreSQL inside the batch's transaction.

Nothing outlives the batch, so a policy change committed before a batch is seen by every
command in it (no cache to invalidate across instances). The batch's own changes (parties
it registers, policy commands it applies) are visible to the commands after them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
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
from compliance.allowance import Claim
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

    # ---- loading ----
    async def load(self, session: AsyncSession, cmds: Sequence[Any]) -> None:
        """Prefetch, in a few statements, what the batch's commands refer to."""
        party_keys: set[Key] = set()
        ea_keys: set[Key] = set()
        tenants: set[TenantMode] = set()
        for cmd in cmds:
            t, m = cmd.ctx.tenant_id, cmd.ctx.mode
            if isinstance(cmd, CreateWallet | CreateVirtualAccount | UpsertExternalAccount):
                party_keys.add((t, m, cmd.customer_id))
            elif isinstance(cmd, SandboxDeposit):
                party_keys.add((t, m, cmd.virtual_account_id))
            elif isinstance(cmd, CreateTransfer):
                tenants.add((t, m))
                for side in (cmd.source, cmd.destination):
                    for pid in (side.provider_wallet_id, side.customer_id):
                        if pid:
                            party_keys.add((t, m, pid))
                if cmd.destination.external_account_id:
                    ea_keys.add((t, m, cmd.destination.external_account_id))
        wanted = [
            addresses.normalized(c.destination.address)
            for c in cmds
            if isinstance(c, CreateTransfer) and c.destination.address
        ]
        for row in await repo.screened(session, wanted):
            self.screen(row.chain, row.address)
        for row in await repo.load_external_accounts(session, sorted(ea_keys)):
            self._remember_external(row)
            party_keys.add((row.tenant_id, row.mode, row.customer_id))
        await self._load_parties(session, party_keys)
        await self._load_tenants(session, tenants)

    def screen(self, chain: str, address: str) -> None:
        self.screened.setdefault(address, set()).add(chain)

    def unscreen(self, chain: str, address: str) -> None:
        self.screened.get(address, set()).discard(chain)

    def screened_on(self, address: str, chain: str | None) -> bool:
        """Whether ``address`` is screened on ``chain`` (on any chain when it is unknown)."""
        chains = self.screened.get(addresses.normalized(address), set())
        return bool(chains) if chain is None else chain.upper() in chains

    async def _load_parties(self, session: AsyncSession, keys: set[Key]) -> None:
        missing = sorted(k for k in keys if k not in self.parties)
        for row in await repo.load_parties(session, missing):
            key = (row.tenant_id, row.mode, row.party_id)
            self.parties[key] = PartyRow(row.kind, row.customer_id, row.country_code)

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

    async def flush(self, session: AsyncSession) -> None:
        await repo.insert_parties(session, self.new_parties)
        self.new_parties = []

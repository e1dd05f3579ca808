"""Address screening (docs/guides/money.md, "Withdrawing to an external address"): operators
list on-chain addresses that no transfer may reach; a transfer to one is refused
``403 address_screened`` before any money is held. EVM addresses compare case-insensitively,
base58 ones exactly (``common.addresses``)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from common import addresses
from common.contracts.commands import AddScreenedAddress, ListScreenedAddresses, RemoveScreenedAddress
from common.errors import invalid, not_found
from common.views import columns
from compliance import repository as repo
from compliance.snapshot import Snapshot

CHAINS = frozenset(addresses.CHAINS)


def _entry(chain: str, address: str) -> tuple[str, str]:
    chain = chain.strip().upper()
    if chain not in CHAINS:
        raise invalid("chain", f"chain must be one of {', '.join(sorted(CHAINS))}")
    if (why := addresses.problem(chain, address)) is not None:
        raise invalid("address", why)
    return chain, addresses.normalized(address)


def _view(row: Any) -> dict[str, Any]:
    return columns(row, "chain", "address", "reason", "added_by", "created_at")


async def add(session: AsyncSession, snap: Snapshot, cmd: AddScreenedAddress) -> dict[str, Any]:
    chain, address = _entry(cmd.chain, cmd.address)
    reason = cmd.reason.strip()
    if not reason or len(reason) > 200:
        raise invalid("reason", "reason is 1 to 200 characters")
    row = await repo.add_screened(session, chain, address, reason, cmd.ctx.actor)
    snap.screen(chain, address)
    return _view(row)


async def remove(session: AsyncSession, snap: Snapshot, cmd: RemoveScreenedAddress) -> dict[str, Any]:
    chain, address = _entry(cmd.chain, cmd.address)
    if not await repo.remove_screened(session, chain, address):
        raise not_found("screened address")
    snap.unscreen(chain, address)
    return {"chain": chain, "address": address, "removed": True}


async def listed(session: AsyncSession, snap: Snapshot, cmd: ListScreenedAddresses) -> dict[str, Any]:
    if not 1 <= cmd.limit <= 100:
        raise invalid("limit", "limit must be between 1 and 100")
    after = None
    if cmd.starting_after is not None:
        chain, sep, address = cmd.starting_after.partition(":")
        if not sep:
            raise invalid("starting_after", "not a cursor returned by list_screened_addresses")
        after = (chain, address)
    rows = await repo.list_screened(session, cmd.limit + 1, after)
    shown = rows[: cmd.limit]
    more = len(rows) > cmd.limit
    return {
        "items": [_view(r) for r in shown],
        "next_cursor": f"{shown[-1].chain}:{shown[-1].address}" if more else None,
    }

"""GetResource / ListResources: one resource by id, or a newest-first cursor page."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from common.contracts.commands import GetResource, ListResources
from common.errors import invalid
from ledger import repository as repo
from ledger.config import LedgerConfig
from ledger.core.effects import Effects, missing
from ledger.views import RENDER

MAX_LIMIT = 100


def _resource(name: str) -> str:
    if name not in RENDER:
        raise invalid("resource", f"resource must be one of {', '.join(RENDER)}")
    return name


async def get_resource(session: AsyncSession, cmd: GetResource, ledger_config: LedgerConfig) -> Effects:
    resource = _resource(cmd.resource)
    row = await repo.read_one(session, resource, cmd.ctx.tenant_id, cmd.ctx.mode, cmd.resource_id)
    if row is None:  # another tenant's (or mode's) id is as unknown as a made-up one
        raise missing(resource.rstrip("s").replace("-", " "), "id")
    return Effects(200, RENDER[resource](row))


async def list_resources(session: AsyncSession, cmd: ListResources, ledger_config: LedgerConfig) -> Effects:
    resource = _resource(cmd.resource)
    if not 1 <= cmd.limit <= MAX_LIMIT:
        raise invalid("limit", f"limit must be between 1 and {MAX_LIMIT}")
    rows = await repo.read_page(
        session, resource, cmd.ctx.tenant_id, cmd.ctx.mode, cmd.limit, cmd.starting_after
    )
    page = rows[: cmd.limit]
    more = len(rows) > cmd.limit
    return Effects(
        200, {"items": [RENDER[resource](r) for r in page], "next_cursor": page[-1].id if more else None}
    )

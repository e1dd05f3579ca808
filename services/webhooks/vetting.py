"""Endpoint URLs vetted before a batch's transaction, bounded in time and per tenant, so that
no tenant's slow DNS holds another tenant's commands.

Vetting a URL resolves its host (``webhooks.targets.vet``: up to ``RESOLVE_TIMEOUT_S`` of DNS).
Done inside the consumer's batch transaction, one command at a time and before the endpoint
limit was checked, a tenant registering endpoints on a domain whose DNS it makes slow held
the partition's batch, and so every other tenant's webhook commands, for 5 s per endpoint.
Now, for the creations and URL changes of a batch, before its transaction opens:

1. limits first: the endpoints each (tenant, mode) has are counted in one read, and no URL of
   a creation for a (tenant, mode) that already has ``MAX_ENDPOINTS`` is resolved at all (the
   transaction, counting again under its lock, refuses each of them); a URL change adds no
   endpoint, and is resolved only when the tenant has that endpoint (one more read);
2. what is left is resolved concurrently, at most ``per_tenant`` lookups of one tenant at a
   time, all within one ``deadline_s``: a lookup still running then is cancelled and its
   creation refused ``unresolvable_host`` ("did not resolve in time"), as a lookup that
   times out always was.

So a batch waits for DNS at most ``deadline_s`` whatever a tenant sends, and no database
transaction or lock is held meanwhile. The verdicts go to ``service.create_webhook`` and
``service.update_webhook``, which create or change nothing for a refused URL.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence

from common.contracts.commands import CreateWebhook, UpdateWebhook
from webhooks import targets
from webhooks.targets import RESOLVE_TIMEOUT_S, TargetError, parse

MAX_ENDPOINTS = 16  # per tenant and mode (docs/security.md, "Round 3"): delivery capacity is shared fairly
Owner = tuple[str, str]  # (tenant, mode)
# What create_webhook and update_webhook are told per command id: None (vetted, public), or
# the refusal.
Verdicts = dict[str, TargetError | None]
Counts = Callable[[Iterable[Owner]], Awaitable[dict[Owner, int]]]
# Which of (tenant, mode, webhook id) the tenant has (a URL change of another is a 404, unresolved).
Owned = Callable[[Iterable[tuple[str, str, str]]], Awaitable[set[str]]]
Vet = Callable[[str, bool], Awaitable[object]]

LATE = TargetError("unresolvable_host", "endpoint_url's host did not resolve in time")
# Never resolved because the tenant had no room: the transaction's own count refuses first.
FULL = TargetError("too_many_endpoints", f"a tenant has at most {MAX_ENDPOINTS} webhook endpoints per mode")


UrlCommand = CreateWebhook | UpdateWebhook


def _with_url(cmds: Sequence[object]) -> list[tuple[UrlCommand, str]]:
    """The creations, and the changes that name a new URL, each with its URL."""
    found: list[tuple[UrlCommand, str]] = []
    for c in cmds:
        if isinstance(c, CreateWebhook | UpdateWebhook) and c.endpoint_url is not None:
            found.append((c, c.endpoint_url))
    return found


async def _worth_vetting(
    named: list[tuple[UrlCommand, str]], owned: Owned | None
) -> list[tuple[UrlCommand, str]]:
    changes = [(c.ctx.tenant_id, c.ctx.mode, c.webhook_id) for c, _ in named if isinstance(c, UpdateWebhook)]
    if owned is None or not changes:
        return named
    have = await owned(changes)
    return [(c, url) for c, url in named if not isinstance(c, UpdateWebhook) or c.webhook_id in have]


async def vet_endpoint_urls(
    cmds: Sequence[object],
    allow_private: bool,
    counts: Counts,
    *,
    deadline_s: float = RESOLVE_TIMEOUT_S,
    per_tenant: int = 2,
    vet_url: Vet | None = None,
    owned: Owned | None = None,
) -> Verdicts:
    """The verdict on each creation's or change's URL that is worth resolving (see the module).
    ``owned`` (None: every endpoint is) leaves out the changes of endpoints the tenant does not
    have: no verdict, so the transaction answers them not found before any lookup."""
    named = await _worth_vetting(_with_url(cmds), owned)
    if not named:
        return {}
    owners = {(c.ctx.tenant_id, c.ctx.mode) for c, _ in named}
    creating = {(c.ctx.tenant_id, c.ctx.mode) for c, _ in named if isinstance(c, CreateWebhook)}
    have = await counts(creating) if creating else {}
    verdicts: Verdicts = {}
    todo: list[tuple[UrlCommand, str]] = []
    for c, url in named:
        owner = (c.ctx.tenant_id, c.ctx.mode)
        if isinstance(c, CreateWebhook) and have.get(owner, 0) >= MAX_ENDPOINTS:
            verdicts[c.command_id] = FULL  # refused in the transaction, never resolved
            continue
        try:
            parse(url, allow_private)
        except TargetError as exc:
            verdicts[c.command_id] = exc
            continue
        todo.append((c, url))
    gates = {owner: asyncio.Semaphore(max(1, per_tenant)) for owner in owners}
    resolve = vet_url or targets.vet

    async def one(c: UrlCommand, url: str) -> None:
        async with gates[(c.ctx.tenant_id, c.ctx.mode)]:
            try:
                await resolve(url, allow_private)
            except TargetError as exc:
                verdicts[c.command_id] = exc
            else:
                verdicts[c.command_id] = None

    tasks = [asyncio.create_task(one(c, url)) for c, url in todo]
    if tasks:
        _, late = await asyncio.wait(tasks, timeout=deadline_s)
        for task in late:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    for c, _ in todo:
        verdicts.setdefault(c.command_id, LATE)
    return verdicts

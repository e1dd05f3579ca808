"""Slow DNS cannot stall a partition: endpoint URLs are vetted before the batch's
transaction, limits first, with a deadline and a per-tenant cap (webhooks.vetting).

Before, each creation resolved its host inside the consumer's batch transaction, one after
the other and before the 16-endpoint check: a tenant whose domain answers DNS slowly held
every other tenant's webhook commands of the partition for 5 s per endpoint.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Any

import pytest

from common.contracts import Ctx
from common.contracts.commands import CreateWebhook, GetWebhook, UpdateWebhook
from webhooks import handlers, targets
from webhooks.targets import TargetError
from webhooks.vetting import FULL, LATE, MAX_ENDPOINTS, vet_endpoint_urls

pytestmark = pytest.mark.unit

SLOW, QUICK = "slow.partner.example", "quick.partner.example"


def create(tenant: str, host: str, mode: str = "sandbox") -> CreateWebhook:
    ctx = Ctx(request_id="r", tenant_id=tenant, mode=mode)  # type: ignore[arg-type]
    return CreateWebhook(
        command_id=uuid.uuid4().hex,
        ctx=ctx,
        webhook_id="we_" + uuid.uuid4().hex,
        endpoint_url=f"https://{host}/h",
    )


class SleepyResolver:
    """``targets._resolve`` whose answers for SLOW never come (until cancelled)."""

    def __init__(self) -> None:
        self.running: dict[str, int] = {}
        self.most: dict[str, int] = {}
        self.asked: list[str] = []
        self.cancelled = 0

    async def __call__(self, host: str, port: int, _resolver: object = None) -> list[str]:
        self.asked.append(host)
        self.running[host] = self.running.get(host, 0) + 1
        self.most[host] = max(self.most.get(host, 0), self.running[host])
        try:
            if host == SLOW:
                await asyncio.sleep(3600)
            return ["93.184.215.14"]
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        finally:
            self.running[host] -= 1


def counts_of(have: dict[tuple[str, str], int], log: list[str] | None = None) -> Any:
    async def counts(owners: Iterable[tuple[str, str]]) -> dict[tuple[str, str], int]:
        if log is not None:
            log.append("counted")
        return {o: have.get(o, 0) for o in owners}

    return counts


async def test_a_sleeping_resolver_holds_only_its_tenant_and_only_until_the_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    resolver = SleepyResolver()
    monkeypatch.setattr(targets, "_resolve", resolver)
    slow = [create("slow-tenant", SLOW) for _ in range(6)]
    quick = [create("quick-tenant", QUICK) for _ in range(3)]
    cmds = [*slow, *quick, GetWebhook(command_id="g", ctx=quick[0].ctx, webhook_id="we_1")]
    verdicts = await vet_endpoint_urls(cmds, False, counts_of({}), deadline_s=0.3, per_tenant=2)
    assert all(verdicts[c.command_id] is None for c in quick)  # vetted, public
    assert all(verdicts[c.command_id] is LATE for c in slow)  # refused: did not resolve in time
    assert resolver.most[SLOW] == 2  # the per-tenant cap: the other four never started
    assert resolver.asked.count(SLOW) == 2 and resolver.cancelled == 2
    assert sum(resolver.running.values()) == 0  # nothing left running after the batch


async def test_limits_are_checked_before_anything_is_resolved(monkeypatch: pytest.MonkeyPatch) -> None:
    resolver = SleepyResolver()
    log: list[str] = []

    async def resolve(host: str, port: int, _resolver: object = None) -> list[str]:
        log.append("resolved")
        return await resolver(host, port)

    monkeypatch.setattr(targets, "_resolve", resolve)
    full = [create("full-tenant", QUICK) for _ in range(3)]
    room = [create("roomy-tenant", QUICK) for _ in range(3)]
    have = {("full-tenant", "sandbox"): MAX_ENDPOINTS, ("roomy-tenant", "sandbox"): MAX_ENDPOINTS - 2}
    verdicts = await vet_endpoint_urls([*full, *room], False, counts_of(have, log), deadline_s=5)
    assert log[0] == "counted" and log.count("resolved") == 3  # the roomy tenant's three only
    assert all(verdicts[c.command_id] is FULL for c in full)  # never resolved: refused in the transaction
    assert all(verdicts[c.command_id] is None for c in room)


async def test_bad_urls_are_refused_without_a_lookup(monkeypatch: pytest.MonkeyPatch) -> None:
    resolver = SleepyResolver()
    monkeypatch.setattr(targets, "_resolve", resolver)
    plain = create("t", QUICK)
    plain = CreateWebhook(
        command_id="c1", ctx=plain.ctx, webhook_id="we_x", endpoint_url="http://quick.example/"
    )
    verdicts = await vet_endpoint_urls([plain], False, counts_of({}))
    refusal = verdicts["c1"]
    assert isinstance(refusal, TargetError) and refusal.reason == "https_required"
    assert resolver.asked == []


async def test_a_new_url_is_vetted_as_a_creation_is_but_never_counted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A PATCH that names a URL is resolved before the transaction like a creation; it adds no
    endpoint, so a tenant at its limit still may move one. A PATCH without a URL is left alone."""
    resolver = SleepyResolver()
    monkeypatch.setattr(targets, "_resolve", resolver)
    ctx = create("full-tenant", QUICK).ctx
    move = UpdateWebhook(command_id="m", ctx=ctx, webhook_id="we_1", endpoint_url=f"https://{QUICK}/new")
    bad = UpdateWebhook(command_id="b", ctx=ctx, webhook_id="we_1", endpoint_url="http://quick.example/")
    pause = UpdateWebhook(command_id="p", ctx=ctx, webhook_id="we_1", status="disabled")
    other = UpdateWebhook(command_id="o", ctx=ctx, webhook_id="we_theirs", endpoint_url=f"https://{SLOW}/")
    log: list[str] = []
    have = {("full-tenant", "sandbox"): MAX_ENDPOINTS}
    asked: list[tuple[str, str, str]] = []

    async def owned(wanted: Iterable[tuple[str, str, str]]) -> set[str]:
        asked.extend(wanted)
        return {"we_1"}

    cmds = [move, bad, pause, other]
    verdicts = await vet_endpoint_urls(cmds, False, counts_of(have, log), owned=owned, deadline_s=5)
    assert verdicts["m"] is None and resolver.asked == [QUICK]
    refusal = verdicts["b"]
    assert isinstance(refusal, TargetError) and refusal.reason == "https_required"
    assert "p" not in verdicts and log == []  # no creation: nothing counted
    assert "o" not in verdicts  # not the tenant's endpoint: answered not found, never resolved
    assert sorted(asked) == [("full-tenant", "sandbox", "we_1")] * 2 + [
        ("full-tenant", "sandbox", "we_theirs")
    ]


class FakeOutbox:
    def __init__(self, log: list[str]) -> None:
        self.log = log

    @asynccontextmanager
    async def transaction(self, sessions: Any) -> AsyncIterator[object]:
        self.log.append("transaction opened")
        yield object()
        self.log.append("transaction closed")


async def test_the_consumer_resolves_before_its_batch_transaction(monkeypatch: pytest.MonkeyPatch) -> None:
    log: list[str] = []
    resolver = SleepyResolver()

    async def resolve(host: str, port: int, _resolver: object = None) -> list[str]:
        log.append(f"resolved {host}")
        return await resolver(host, port)

    monkeypatch.setattr(targets, "_resolve", resolve)
    consumer: Any = handlers.WebhooksConsumer.__new__(handlers.WebhooksConsumer)
    consumer.outbox, consumer.sessions, consumer.vet_per_tenant, consumer.commands_handled = (
        FakeOutbox(log),
        None,
        2,
        0,
    )
    consumer.env = type("Env", (), {"allow_private": False})()
    consumer._endpoint_counts = counts_of({}, log)  # noqa: SLF001
    seen: dict[str, object] = {}

    async def run_one(session: object, cmd: CreateWebhook, vetted: dict[str, object] | None = None) -> Any:
        log.append("run_one")
        seen[cmd.command_id] = (vetted or {}).get(cmd.command_id, "not vetted")
        return type("R", (), {"request_id": "r"})()

    consumer.run_one = run_one
    cmd = create("t", QUICK)
    await handlers.WebhooksConsumer.run_commands(consumer, [cmd])
    assert log == ["counted", f"resolved {QUICK}", "transaction opened", "run_one", "transaction closed"]
    assert seen[cmd.command_id] is None

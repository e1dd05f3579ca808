"""Replies only where the caller listens, and the anchors topic for the anchor publisher alone
(docs/security.md, "Transfer ids, live and replies"): the pure rule, the consumers' admission,
the publishing guard and the ACL plan, with no broker.

On the tree before, a read on ``ledger.reads`` or a customer on ``compliance.commands`` naming
``sluice.journal.anchors`` as its reply address put result records on the anchors topic, and
verify_journal answered ``anchor_signature_invalid`` from then on. The same attack on the stack:
tests/integration/test_authority_round2.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import pytest
from prometheus_client import REGISTRY

from common import acls, replies
from common.authority import AuthorityInvalid
from common.consume import BatchProcessor, Failure
from common.contracts.base import Ctx, Result, encode
from common.contracts.commands import GetResource
from common.outbox import OutMessage
from common.topics import Topic, Topics
from common.tracing import publish
from compliance.service import readdressed

pytestmark = pytest.mark.unit

TOPICS = Topics("sluice")


def _read(reply_to: str | None) -> GetResource:
    ctx = Ctx(request_id="req_1", tenant_id="ten_1", mode="sandbox", reply_to=reply_to)
    return GetResource(command_id="cmd_1", ctx=ctx, resource="transfers", resource_id="tr_1")


def _count(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


@pytest.mark.parametrize(
    ("reply_to", "ok"),
    [
        ("sluice.replies.gateway-host-1.1764300000000", True),
        ("sluice.replies.admin-1.1", True),
        ("sluice.journal.anchors", False),
        ("sluice.events", False),
        ("sluice.ledger.commands", False),
        ("sluice.replies.", False),  # the prefix alone names nobody
        ("other.replies.gateway-1.1", False),  # another deployment's
        ("sluice.replies.gateway 1", False),  # not a topic name
        ("sluice.replies." + "a" * 250, False),  # longer than Kafka allows
    ],
)
def test_a_reply_goes_only_to_a_reply_topic_of_the_deployment(reply_to: str, ok: bool) -> None:
    assert replies.allowed("sluice", reply_to) is ok


def test_a_command_naming_another_topic_is_refused_at_admission_and_counted() -> None:
    check = replies.admit("ledger", "sluice")
    check(_read(None))  # no answer wanted: nothing to check
    check(_read("sluice.replies.gateway-a.1"))
    before = _count("sluice_authority_refused_total", service="ledger", why="reply_to")
    with pytest.raises(AuthorityInvalid) as refused:
        check(_read(TOPICS.journal_anchors))
    assert refused.value.why == "reply_to" and refused.value.reason == "authority_invalid"
    assert _count("sluice_authority_refused_total", service="ledger", why="reply_to") == before + 1


async def test_the_consumer_dead_letters_it_and_never_handles_it() -> None:
    handled: list[Any] = []
    letters: list[Failure] = []

    async def handle(batch: Sequence[GetResource]) -> None:
        handled.extend(batch)

    async def dead_letter(failure: Failure) -> None:
        letters.append(failure)

    processor = BatchProcessor(
        name="ledger-reads",
        decode=lambda raw: _read(raw.decode() or None),
        handle_batch=handle,
        dead_letter=dead_letter,
        admit=replies.admit("ledger", "sluice"),
    )
    records = [
        SimpleNamespace(topic="sluice.ledger.reads", partition=0, offset=i, key=None, value=v, headers=[])
        for i, v in enumerate([b"sluice.journal.anchors", b"sluice.replies.gateway-a.1"])
    ]
    await processor(records)  # type: ignore[arg-type]
    assert [c.ctx.reply_to for c in handled] == ["sluice.replies.gateway-a.1"]
    assert [type(f.error).__name__ for f in letters] == ["AuthorityInvalid"]


def test_an_answer_to_another_topic_is_dropped_and_counted() -> None:
    before = _count("sluice_replies_refused_total", service="compliance")
    assert (
        replies.address("compliance", "sluice", "sluice.replies.gateway-a.1") == "sluice.replies.gateway-a.1"
    )
    assert replies.address("compliance", "sluice", None) is None
    assert replies.address("compliance", "sluice", "") is None
    assert replies.address("compliance", "sluice", TOPICS.journal_anchors) is None
    assert _count("sluice_replies_refused_total", service="compliance") == before + 1


def test_a_stored_answer_is_never_readdressed_to_a_topic_that_is_no_reply_topic() -> None:
    """A decision stored before the rule, answered to the anchors topic, is answered again to
    the caller waiting now, or to nobody."""
    result = encode(Result(command_id="cmd_1", request_id="req_1", status=403))
    stored = OutMessage(TOPICS.journal_anchors, result, partition=0)
    waiting = _read("sluice.replies.gateway-b.2")
    assert readdressed(stored, waiting, TOPICS, lambda c: c).topic == "sluice.replies.gateway-b.2"  # type: ignore[arg-type]
    assert readdressed(stored, _read(None), TOPICS, lambda c: c).topic == ""  # type: ignore[arg-type]


async def test_only_the_anchor_publisher_may_publish_to_the_anchors_topic() -> None:
    with pytest.raises(PermissionError):
        await publish(None, b"{}", topic=TOPICS.journal_anchors)  # type: ignore[arg-type]
    with pytest.raises(PermissionError):
        await publish(None, b"{}", topic=Topics("other").journal_anchors, partition=0)  # type: ignore[arg-type]


@pytest.mark.parametrize("prefix", ["sluice", "test-abc"])
def test_the_acls_let_the_ledger_alone_write_the_anchors_and_no_reply_grant_reaches_them(prefix: str) -> None:
    plan = acls.plan(prefix)
    anchors = Topics(prefix)[Topic.JOURNAL_ANCHORS]
    assert acls.writers(plan, anchors) == {"User:ledger"}
    for access in plan.values():
        for pattern in access.write:
            if pattern.prefixed:
                assert not anchors.startswith(pattern.name), (access.principal, pattern)

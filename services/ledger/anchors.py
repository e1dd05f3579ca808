"""The journal anchored outside PostgreSQL (contract 14.3, issue 38).

Whoever can write the database can rewrite a hash chain end to end and move its head row to
match, or delete the head row: the chain then verifies against itself. So every
``SLUICE_JOURNAL_ANCHOR_INTERVAL_S`` (5 s) the ledger publishes, for each chain whose head
moved since it last did, a :class:`~common.contracts.anchors.JournalAnchor` (tenant, mode, seq,
head hash, when) signed with HMAC-SHA256 under ``SLUICE_JOURNAL_ANCHOR_KEY`` to
``<prefix>.journal.anchors``: kept forever (``retention.ms=-1``), never compacted, keyed by
chain so one chain's anchors stay in order in one partition. The database never holds the key,
so it can neither forge an anchor nor take one back; ``verify_journal`` compares each chain
with its newest validly signed anchor (``ledger.verification``).

Every ledger instance publishes (an anchor twice is harmless: the same head, signed twice);
a restarted instance anchors every chain once. The key is never logged: messages name the
setting only.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import msgspec
from aiokafka import AIOKafkaConsumer, TopicPartition
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from common import kafka
from common.contracts.anchors import ANCHORS, JournalAnchor
from common.contracts.base import as_mode
from common.settings import Settings
from common.times import iso
from ledger import repository as repo

log = logging.getLogger(__name__)

KEY_SETTING = "SLUICE_JOURNAL_ANCHOR_KEY"
ChainKey = tuple[str, str]  # (tenant_id, mode)
Publish = Callable[[bytes, bytes], Awaitable[None]]  # (record key, record value)


def signature(anchor: JournalAnchor, key: bytes) -> str:
    return hmac.new(key, anchor.signed_text(), hashlib.sha256).hexdigest()


def sign(anchor: JournalAnchor, key: bytes) -> JournalAnchor:
    """``anchor`` with its signature under ``key``."""
    return msgspec.structs.replace(anchor, signature=signature(anchor, key))


def is_signed(anchor: JournalAnchor, key: bytes) -> bool:
    """Whether ``anchor`` carries a valid signature under ``key`` (compared in constant time)."""
    return hmac.compare_digest(anchor.signature, signature(anchor, key))


def record_key(tenant_id: str, mode: str) -> bytes:
    """The Kafka key of a chain's anchors: one chain, one partition, in order."""
    return f"{tenant_id}:{mode}".encode()


@dataclass
class Found:
    """What the anchors topic says: the newest validly signed anchor of each chain (highest
    seq; the first one of a tie) and the records that are not valid anchors."""

    newest: dict[ChainKey, JournalAnchor] = field(default_factory=dict)
    untrusted: list[dict[str, Any]] = field(default_factory=list)

    def add(self, value: bytes, key: bytes, where: dict[str, Any]) -> None:
        try:
            anchor = ANCHORS.decode(value)
        except (msgspec.DecodeError, msgspec.ValidationError):
            self.untrusted.append({**where, "why": "not an anchor"})
            return
        if not is_signed(anchor, key):
            chain = {"tenant_id": anchor.tenant_id, "mode": anchor.mode, "seq": anchor.seq}
            self.untrusted.append({**where, **chain, "why": "bad signature"})
            return
        chain_key = (anchor.tenant_id, anchor.mode)
        known = self.newest.get(chain_key)
        if known is None or anchor.seq > known.seq:  # a tie: the first anchor of that head stands
            self.newest[chain_key] = anchor


def newest_anchors(records: Iterable[tuple[int, int, bytes]], key: bytes) -> Found:
    """:class:`Found` from ``(partition, offset, value)`` records in offset order."""
    found = Found()
    for partition, offset, value in records:
        found.add(value, key, {"partition": partition, "offset": offset})
    return found


async def anchor_moved(
    session: AsyncSession,
    publish: Publish,
    key: bytes,
    anchored: dict[ChainKey, tuple[int, str]],
    refused: set[ChainKey] | None = None,
) -> int:
    """Publish a signed anchor for every chain whose head moved from what ``anchored`` holds,
    and record it there once published: the number published. Safe to repeat.

    A head is anchored only if its chain still extends the chain's last anchor (the entry at
    the anchored seq keeps the anchored hash): a chain rewritten by SQL, head row included,
    must not be anchored as it now is. It is logged (once per chain in ``refused``) and left for
    ``verify_journal``."""
    refused = set() if refused is None else refused
    stamp = iso(datetime.now(UTC))
    moved: list[JournalAnchor] = []
    for head in await repo.chain_heads(session, None, None):
        chain_key, now = (head.tenant_id, head.mode), (head.seq, head.head_hash)
        before = anchored.get(chain_key)
        if before == now:
            continue
        if before is not None and not await _extends(session, head, before):
            if chain_key not in refused:
                refused.add(chain_key)
                log.error(
                    "journal chain %s/%s no longer extends its anchor at entry %d: not anchored",
                    head.tenant_id,
                    head.mode,
                    before[0],
                )
            continue
        mode = as_mode(head.mode)
        anchor = JournalAnchor(
            tenant_id=head.tenant_id, mode=mode, seq=head.seq, head_hash=head.head_hash, anchored_at=stamp
        )
        moved.append(sign(anchor, key))
    # Together: one produce request per partition, not one round trip per chain.
    await asyncio.gather(*(publish(record_key(a.tenant_id, a.mode), msgspec.json.encode(a)) for a in moved))
    for a in moved:
        anchored[(a.tenant_id, a.mode)] = (a.seq, a.head_hash)
    return len(moved)


async def _extends(session: AsyncSession, head: Any, anchored: tuple[int, str]) -> bool:
    seq, anchored_hash = anchored
    if head.seq <= seq:  # a head never moves back, nor changes in place
        return False
    return await repo.entry_hash_at(session, head.tenant_id, head.mode, seq) == anchored_hash


class Anchors:
    """The ledger's anchors: the publishing task and the reader ``verify_journal`` uses."""

    def __init__(
        self,
        settings: Settings,
        sm: async_sessionmaker[AsyncSession],
        topic: str,
        publish: Callable[..., Awaitable[None]],
        *,
        read_timeout_s: float = 30.0,
    ) -> None:
        self.settings, self.sm, self.topic, self._publish = settings, sm, topic, publish
        self.key = settings.journal_anchor_key.get_secret_value().encode()
        self.interval_s = settings.journal_anchor_interval_s
        self.read_timeout_s = read_timeout_s
        self.anchored: dict[ChainKey, tuple[int, str]] = {}
        self.refused: set[ChainKey] = set()  # chains logged as no longer extending their anchor
        self.published = 0

    async def publish_once(self) -> int:
        async def send(record_key: bytes, value: bytes) -> None:
            await self._publish(value, topic=self.topic, key=record_key)

        async with self.sm() as session, session.begin():
            sent = await anchor_moved(session, send, self.key, self.anchored, self.refused)
        self.published += sent
        return sent

    async def run_forever(self) -> None:
        """A supervised task: learn what the topic already anchors (a restarted instance does
        not anchor a chain rewritten while it was down), then anchor the chains that moved
        every interval."""
        found = await self.read()
        for chain_key, anchor in found.newest.items():
            self.anchored.setdefault(chain_key, (anchor.seq, anchor.head_hash))
        while True:
            await self.publish_once()
            await asyncio.sleep(self.interval_s)

    async def read(self) -> Found:
        """Every record of the anchors topic up to its end as it is now (no consumer group)."""
        args = kafka.client_args(self.settings)
        partitions = sorted(await kafka.partition_leaders(self.topic, **args))
        consumer = AIOKafkaConsumer(
            **args,
            group_id=None,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            request_timeout_ms=self.settings.kafka_request_timeout_ms,
        )
        await consumer.start()
        found = Found()
        try:
            tps = [TopicPartition(self.topic, p) for p in partitions]
            if not tps:  # created at every start: gone means deleted
                raise RuntimeError(f"topic {self.topic} does not exist")
            consumer.assign(tps)
            starts, ends = await consumer.beginning_offsets(tps), await consumer.end_offsets(tps)
            for tp in tps:  # an explicit position: seek_to_beginning raced assign()'s own reset
                consumer.seek(tp, starts[tp])
            deadline = time.monotonic() + self.read_timeout_s
            todo = {tp for tp in tps if ends[tp] > starts[tp]}
            while todo:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{self.topic}: not read to its end in {self.read_timeout_s} s")
                batches = await consumer.getmany(*todo, timeout_ms=500, max_records=5000)
                for tp, records in batches.items():
                    for r in records:
                        if r.offset < ends[tp]:
                            found.add(
                                r.value or b"", self.key, {"partition": tp.partition, "offset": r.offset}
                            )
                for tp in list(todo):
                    if await consumer.position(tp) >= ends[tp]:
                        todo.discard(tp)
        finally:
            await consumer.stop()
        return found

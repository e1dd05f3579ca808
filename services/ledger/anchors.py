"""The journal anchored outside PostgreSQL (docs/security.md, "Journal anchors, round 2").

Whoever can write the database can rewrite a hash chain end to end and move its head row to
match, or delete the head row: the chain then verifies against itself. So every
``SLUICE_JOURNAL_ANCHOR_INTERVAL_S`` (5 s) the ledger publishes, for each chain whose head
moved, a :class:`~common.contracts.anchors.JournalAnchor` (tenant, mode, seq, head hash, when,
the digest of the anchor it extends, the key id) signed with Ed25519 under
``SLUICE_JOURNAL_ANCHOR_KEY`` to ``<prefix>.journal.anchors``: kept forever, never compacted,
keyed by chain so one chain's anchors stay in order in one partition. The database never holds
the key, so it can neither forge an anchor nor take one back; verification needs only the
public keys (``SLUICE_JOURNAL_ANCHOR_VERIFY_KEYS``).

Every ledger instance anchors, and each extends the newest anchor of the chain on the topic,
whoever signed it: before each turn it reads what the topic gained since its last turn. It
anchors a head only if the chain still extends that anchor (the entry at the anchored seq keeps
the anchored hash, and every entry after it links by hash up to the head). Otherwise it refuses,
logs it (critical) and counts it (``sluice_journal_anchor_refused_total``): a rewrite past one
instance's last anchor is not anchored by another instance that had anchored less (round 1
checked an instance's own last anchor only). ``sluice_journal_unanchored_seconds`` is the age
of the oldest entry no anchor covers (0 when every chain is anchored, an idle journal too).

The key is never logged: messages name the setting only.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import msgspec
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import KafkaError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from common import kafka
from common.contracts.anchors import JournalAnchor
from common.contracts.base import as_mode
from common.metrics import ANCHOR_INTERVAL, ANCHOR_REFUSED, UNANCHORED
from common.settings import Settings
from common.times import iso
from ledger import repository as repo
from ledger.anchor_stream import (
    KEY_SETTING,
    VERIFY_SETTING,
    AnchorKey,
    AnchorVerifyKeys,
    ChainKey,
    Found,
    newest_anchors,
)
from ledger.core import chain

__all__ = [
    "KEY_SETTING",
    "VERIFY_SETTING",
    "AnchorKey",
    "AnchorVerifyKeys",
    "Anchors",
    "Found",
    "Plan",
    "anchor_moved",
    "newest_anchors",
    "record_key",
]

log = logging.getLogger(__name__)
Publish = Callable[[bytes, bytes], Awaitable[None]]  # (record key, record value)
PAGE = 2000


def record_key(tenant_id: str, mode: str) -> bytes:
    """The Kafka key of a chain's anchors: one chain, one partition, in order."""
    return f"{tenant_id}:{mode}".encode()


@dataclass
class Plan:
    """One turn: the anchors to publish, the chains refused, and when the oldest entry of each
    chain not yet anchored was written (the chains to anchor now included)."""

    anchors: list[JournalAnchor] = field(default_factory=list)
    refused: list[ChainKey] = field(default_factory=list)
    waiting_since: dict[ChainKey, datetime] = field(default_factory=dict)

    def unanchored_s(self, now: datetime, published: bool) -> float:
        """The age of the oldest entry no anchor covers: once published, only refused chains'."""
        chains = self.refused if published else list(self.waiting_since)
        ages = [(now - self.waiting_since[k]).total_seconds() for k in chains if k in self.waiting_since]
        return max([0.0, *ages])


async def plan_anchors(
    session: AsyncSession, key: AnchorKey, found: Found, refused: set[tuple[ChainKey, str]] | None = None
) -> Plan:
    """The anchors that extend the newest anchor of each chain whose head moved (see the module
    docstring). A chain that no longer extends its newest anchor is refused: logged critical
    once per chain and anchor (``refused`` remembers), counted every turn."""
    refused = set() if refused is None else refused
    plan, stamp, tips = Plan(), iso(datetime.now(UTC)), found.newest
    for head in await repo.chain_heads(session, None, None):
        chain_key = (head.tenant_id, head.mode)
        newest = tips.get(chain_key)
        if newest is not None and (newest.seq, newest.head_hash) == (head.seq, head.head_hash):
            continue
        extends, first_new = await _extends(session, head, newest)
        if first_new is not None:
            plan.waiting_since[chain_key] = first_new
        if not extends:
            assert newest is not None  # a chain without an anchor extends nothing to break
            plan.refused.append(chain_key)
            ANCHOR_REFUSED.inc()
            if (chain_key, newest.digest()) not in refused:
                refused.add((chain_key, newest.digest()))
                log.critical(
                    "journal chain %s/%s (head entry %d) no longer extends its anchor at entry %d"
                    " (%s): not anchored; run verify_journal",
                    head.tenant_id,
                    head.mode,
                    head.seq,
                    newest.seq,
                    newest.anchored_at,
                )
            continue
        anchor = JournalAnchor(
            tenant_id=head.tenant_id,
            mode=as_mode(head.mode),
            seq=head.seq,
            head_hash=head.head_hash,
            anchored_at=stamp,
            prev=newest.digest() if newest is not None else "",
        )
        plan.anchors.append(key.sign(anchor))
    return plan


async def _extends(
    session: AsyncSession, head: Any, newest: JournalAnchor | None
) -> tuple[bool, datetime | None]:
    """Whether the chain up to ``head`` extends ``newest`` (the entry at its seq keeps its hash,
    every entry after it links by hash from there, the last one being the head), and when the
    chain's first entry after the anchor was written (None: no such entry). A chain never
    anchored extends nothing to break: verify_journal checks it whole."""
    if newest is None:
        page = await repo.chain_page(session, head.tenant_id, head.mode, 0, 1)
        return True, page[0][0].created_at if page else None
    seq, previous = newest.seq, newest.head_hash
    if head.seq <= seq:  # a head never moves back, nor changes in place
        return False, None
    after = await repo.chain_page(session, head.tenant_id, head.mode, seq, 1)
    first: datetime | None = after[0][0].created_at if after else None
    at = chain.GENESIS if seq == 0 else await repo.entry_hash_at(session, head.tenant_id, head.mode, seq)
    if at != previous:
        return False, first
    while seq < head.seq:
        page = await repo.chain_page(session, head.tenant_id, head.mode, seq, PAGE)
        for e, postings in page:
            if e.seq > head.seq:  # written after the head was read: the next turn's
                break
            if e.seq != seq + 1 or chain.entry_version(e, postings, previous, False) is None:
                return False, first
            seq, previous = e.seq, e.hash
        if len(page) < PAGE:
            break
    return (seq, previous) == (head.seq, head.head_hash), first


async def anchor_moved(
    session: AsyncSession,
    publish: Publish,
    key: AnchorKey,
    found: Found,
    refused: set[tuple[ChainKey, str]] | None = None,
) -> int:
    """Plan (``plan_anchors``) and publish; the anchors published join ``found``. Safe to repeat."""
    plan = await plan_anchors(session, key, found, refused)
    await publish_anchors(plan, publish, found)
    return len(plan.anchors)


async def publish_anchors(plan: Plan, publish: Publish, found: Found) -> None:
    # Together: one produce request per partition, not one round trip per chain.
    sends = (publish(record_key(a.tenant_id, a.mode), msgspec.json.encode(a)) for a in plan.anchors)
    await asyncio.gather(*sends)
    for a in plan.anchors:
        found.take(a, {"own": True})


class Anchors:
    """The ledger's anchors: the publishing task and the reader ``verify_journal`` uses."""

    def __init__(
        self,
        settings: Settings,
        sessions: async_sessionmaker[AsyncSession],
        topic: str,
        publish: Callable[..., Awaitable[None]],
        *,
        read_timeout_s: float = 30.0,
    ) -> None:
        self.settings, self.sessions, self.topic, self._publish = settings, sessions, topic, publish
        setting = settings.journal_anchor_key.get_secret_value()
        self.key = AnchorKey.parse(setting) if setting else None
        self.keys = AnchorVerifyKeys.parse(settings.journal_anchor_verify_keys)
        self.interval_s = settings.journal_anchor_interval_s
        self.read_timeout_s = read_timeout_s
        self.found = Found()  # what this instance has seen on the topic (and published), never forgotten
        self.positions: dict[TopicPartition, int] = {}
        self.refused: set[ChainKey] = set()  # chains refused (for tests and stats)
        self._logged: set[tuple[ChainKey, str]] = set()
        self.published = 0
        # The publishing task's reader, kept across turns: a consumer started every turn (and an
        # admin client to find the partitions) cost the broker two connections and their metadata
        # per turn per instance; kept, a turn is a metadata request, two offset lookups and a fetch.
        self._kept: AIOKafkaConsumer | None = None
        self._keep = False
        ANCHOR_INTERVAL.set(self.interval_s)

    async def publish_once(self) -> int:
        """One turn: read what the topic gained, then anchor the chains that moved."""
        if self.key is None:
            raise RuntimeError(f"{KEY_SETTING} is not set: this instance does not anchor")
        unread: Exception | None = None
        try:
            await self.catch_up()
        except (KafkaError, OSError, RuntimeError) as exc:  # TimeoutError is an OSError
            unread = exc  # the gauge still says how long entries have waited; then the turn fails

        async def send(record_key: bytes, value: bytes) -> None:
            await self._publish(value, topic=self.topic, key=record_key)

        async with self.sessions() as session, session.begin():
            plan = await plan_anchors(session, self.key, self.found, self._logged)
        UNANCHORED.set(plan.unanchored_s(datetime.now(UTC), published=False))
        if unread is not None:  # never anchor without the newest anchors: another may have signed
            raise unread
        await publish_anchors(plan, send, self.found)
        self.refused.update(plan.refused)
        UNANCHORED.set(plan.unanchored_s(datetime.now(UTC), published=True))
        self.published += len(plan.anchors)
        return len(plan.anchors)

    # Kafka I/O, not mutated: tests/integration/test_journal_anchor_chain.py runs it on the stack
    async def run_forever(self) -> None:  # pragma: no mutate block
        """A supervised task: anchor the chains that moved every interval."""
        self._keep = True
        try:
            while True:
                await self.publish_once()
                await asyncio.sleep(self.interval_s)
        finally:
            self._keep = False
            await self._drop_kept()

    # Kafka I/O, not mutated: the integration test_journal_anchor_chain.py (two instances) covers it
    async def catch_up(self) -> None:  # pragma: no mutate block
        """Read what the topic gained since the last turn into ``found``. A topic that lost
        records this instance had read (deleted and recreated, or records deleted) is logged
        critical; what was seen is kept, so the next anchors name anchors the topic no longer
        holds, and verify_journal reports the gap."""
        await self._read(self.found, self.positions)
        self.found.compact()

    async def _drop_kept(self) -> None:  # pragma: no mutate block
        kept, self._kept = self._kept, None
        if kept is not None:
            await kept.stop()

    async def _consumer(self) -> AIOKafkaConsumer:  # pragma: no mutate block
        consumer = AIOKafkaConsumer(
            **kafka.client_args(self.settings),
            group_id=None,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            request_timeout_ms=self.settings.kafka_request_timeout_ms,
        )
        try:
            await consumer.start()
        except BaseException:
            await consumer.stop()  # a consumer that failed to start still holds its client
            raise
        return consumer

    # Kafka I/O: test_journal_anchor_chain.py::test_a_lost_anchors_topic_is_a_finding (integration)
    async def read(self) -> Found:  # pragma: no mutate block
        """Every record of the anchors topic up to its end as it is now (no consumer group):
        ``lost`` says if the topic is gone or no longer starts at offset 0."""
        found = Found()
        await self._read(found, {}, own=True)
        return found

    # Kafka I/O: tests/integration/test_journal_anchor_chain.py (a lost topic, deleted records, two instances)
    async def _read(
        self, found: Found, positions: dict[TopicPartition, int], own: bool = False
    ) -> None:  # pragma: no mutate block
        """Read the topic from ``positions`` to its end now: while the publishing task runs, on
        its kept reader (paused between turns, so that it fetches nothing); otherwise, or when
        ``own`` (verify_journal's full read), on a consumer of its own."""
        if own or not self._keep:
            await self._read_on(found, positions, None)
            return
        if self._kept is None:
            self._kept = await self._consumer()
        try:
            await self._read_on(found, positions, self._kept)
        except Exception:
            await self._drop_kept()  # a reader in an unknown state is started afresh next turn
            raise

    async def _read_on(
        self, found: Found, positions: dict[TopicPartition, int], kept: AIOKafkaConsumer | None
    ) -> None:  # pragma: no mutate block
        partitions = await self._partitions(kept)
        if not partitions:  # created at every start: gone means deleted
            gone = f"the topic {self.topic} does not exist"
            if gone not in found.lost:
                found.lost.append(gone)
                log.critical("journal anchors: %s", gone)
            return
        consumer = kept or await self._consumer()
        try:
            tps = [TopicPartition(self.topic, p) for p in partitions]
            if set(consumer.assignment()) != set(tps):
                consumer.assign(tps)
            consumer.resume(*tps)
            starts, ends = await consumer.beginning_offsets(tps), await consumer.end_offsets(tps)
            for tp in tps:
                _check_offsets(found, tp, starts[tp], ends[tp], positions.get(tp))
                at = positions.get(tp, 0)
                positions[tp] = max(starts[tp], at) if at <= ends[tp] else starts[tp]
                consumer.seek(tp, positions[tp])  # explicit: seek_to_beginning raced assign()
            await self._drain(consumer, tps, ends, found, positions)
            consumer.pause(*tps)
        finally:
            if kept is None:
                await consumer.stop()

    async def _partitions(self, kept: AIOKafkaConsumer | None) -> list[int]:  # pragma: no mutate block
        """The topic's partitions as the cluster reports them now: through the kept reader's
        connection when it has the topic's metadata, else an admin client's describe."""
        if kept is not None and kept.assignment():
            if self.topic not in await kept.topics():  # a metadata request: deleted since?
                return []
            known = kept.partitions_for_topic(self.topic)
            if known:
                return sorted(known)
        return sorted(await kafka.partition_leaders(self.topic, **kafka.client_args(self.settings)))

    # Kafka I/O: tests/integration/test_journal_anchor_chain.py reads through it
    async def _drain(
        self,
        consumer: AIOKafkaConsumer,
        tps: list[TopicPartition],
        ends: dict[TopicPartition, int],
        found: Found,
        positions: dict[TopicPartition, int],
    ) -> None:  # pragma: no mutate block
        deadline = time.monotonic() + self.read_timeout_s
        todo = {tp for tp in tps if ends[tp] > positions[tp]}
        while todo:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.topic}: not read to its end in {self.read_timeout_s} s")
            batches = await consumer.getmany(*todo, timeout_ms=500, max_records=5000)
            for tp, records in batches.items():
                for r in records:
                    if r.offset < ends[tp]:
                        found.add(r.value or b"", self.keys, {"partition": tp.partition, "offset": r.offset})
                        positions[tp] = r.offset + 1
            for tp in list(todo):
                if await consumer.position(tp) >= ends[tp]:
                    positions[tp] = ends[tp]
                    todo.discard(tp)


def _check_offsets(found: Found, tp: TopicPartition, start: int, end: int, position: int | None) -> None:
    """A partition that no longer starts at 0 lost its first records (the topic is never
    compacted nor expired); one that ends before what this instance read was started over."""
    why = None
    if start > 0:
        why = f"partition {tp.partition} of {tp.topic} starts at offset {start}: records were deleted"
    elif position is not None and end < position:
        why = f"partition {tp.partition} of {tp.topic} ends at {end}, before offset {position}: started over"
    if why is not None and why not in found.lost:
        found.lost.append(why)
        log.critical("journal anchors: %s", why)

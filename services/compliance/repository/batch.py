"""A compliance batch in two statements, whatever its size: read (and lock the day's cap), then
write.

1. :func:`read_batch`: the decisions already stored for the batch's command ids (the inbox),
   the screened entries of its destination addresses, the external accounts it names, every
   party it names (and the owners of those accounts) with its customer's country, the
   approved routes and caps of its tenants, and the cap usage rows of its transfers' (tenant,
   mode, currency, UTC day), created at zero when missing and locked in key order (the only
   lock a batch takes before its writes: two instances wait for each other, never deadlock).
2. :func:`write_batch`: the new usage totals, the parties registered, the decisions (a granted
   transfer's hold on its decision) and the outbox rows (and the deletion of rows published
   earlier), then the commit.

Each text is built once from the tables of ``compliance.models`` and prepared once per
connection.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from typing import Any, NamedTuple

from sqlalchemy.ext.asyncio import AsyncSession

from common.bulk import Statement, columns_of, fetch, pg_type, qualified
from common.identity import tenants as identity_tenants
from compliance.models import (
    cap_holds,
    cap_usage,
    caps,
    decisions,
    external_accounts,
    outbox,
    parties,
    routes,
    screened_addresses,
)

__all__ = ["BatchRead", "BatchWrite", "Stored", "Wanted", "read_batch", "write_batch"]

Key = tuple[str, str, str]
UsageKey = tuple[str, str, str, date]
_TEXT = "TEXT[]"
PARTY_COLUMNS = ["tenant_id", "mode", "party_id", "kind", "customer_id", "country_code"]
DECISION_COLUMNS = [c.name for c in decisions.c if c.name != "created_at"]
OUTBOX_COLUMNS = ["topic", "key", "partition", "payload"]

_read = Statement()
_tenants = (
    f"unnest({_read.param('t.tenant_id', _TEXT)}, {_read.param('t.mode', _TEXT)}) AS k(tenant_id, mode)"
)
READ = f"""
WITH ea AS (
    SELECT e.id, e.tenant_id, e.mode, e.customer_id, e.rail, e.currency, e.approved
    FROM {qualified(external_accounts)} e
    JOIN unnest({_read.param("e.tenant_id", _TEXT)}, {_read.param("e.mode", _TEXT)},
                {_read.param("e.id", _TEXT)}) AS k(tenant_id, mode, id)
      ON e.tenant_id = k.tenant_id AND e.mode = k.mode AND e.id = k.id
), wanted AS (
    SELECT * FROM unnest({_read.param("p.tenant_id", _TEXT)}, {_read.param("p.mode", _TEXT)},
                         {_read.param("p.party_id", _TEXT)}) AS k(tenant_id, mode, party_id)
    UNION SELECT tenant_id, mode, customer_id FROM ea
), usage AS (
    INSERT INTO {qualified(cap_usage)} (tenant_id, mode, currency, day, used)
    SELECT k.tenant_id, k.mode, k.currency, k.day, 0
    FROM unnest({_read.param("u.tenant_id", _TEXT)}, {_read.param("u.mode", _TEXT)},
                {_read.param("u.currency", _TEXT)}, {_read.param("u.day", "DATE[]")})
         AS k(tenant_id, mode, currency, day)
    ORDER BY k.tenant_id, k.mode, k.currency, k.day
    ON CONFLICT (tenant_id, mode, currency, day) DO UPDATE SET used = {cap_usage.name}.used
    RETURNING tenant_id, mode, currency, day, used
)
SELECT
    ARRAY(SELECT ROW(d.command_id, d.out_topic, d.out_key, d.out_partition, d.out_payload,
                     d.id, d.outcome, d.rule)
          FROM {qualified(decisions)} d
          WHERE d.command_id = ANY({_read.param("ids", _TEXT)})) AS stored,
    ARRAY(SELECT ROW(s.chain, s.address) FROM {qualified(screened_addresses)} s
          WHERE s.address = ANY({_read.param("addresses", _TEXT)})) AS screened,
    ARRAY(SELECT ROW(ea.id, ea.tenant_id, ea.mode, ea.customer_id, ea.rail, ea.currency, ea.approved)
          FROM ea) AS external,
    ARRAY(SELECT ROW(p.tenant_id, p.mode, p.party_id, p.kind, p.customer_id,
                     coalesce(p.country_code, c.country_code))
          FROM {qualified(parties)} p
          JOIN wanted w ON p.tenant_id = w.tenant_id AND p.mode = w.mode AND p.party_id = w.party_id
          LEFT JOIN {qualified(parties)} c
            ON c.tenant_id = p.tenant_id AND c.mode = p.mode AND c.party_id = p.customer_id) AS parties,
    ARRAY(SELECT ROW(r.tenant_id, r.mode, r.rail, r.currency) FROM {qualified(routes)} r
          JOIN {_tenants} ON r.tenant_id = k.tenant_id AND r.mode = k.mode WHERE r.approved) AS routes,
    ARRAY(SELECT ROW(c.tenant_id, c.mode, c.per_transfer, c.daily, c.review_threshold)
          FROM {qualified(caps)} c
          JOIN {_tenants} ON c.tenant_id = k.tenant_id AND c.mode = k.mode) AS caps,
    ARRAY(SELECT ROW(tenant_id, mode, currency, day, used) FROM usage) AS usage,
    ARRAY(SELECT t.id::text FROM {qualified(identity_tenants)} t
          WHERE t.id = ANY({_read.param("tenant_ids", "UUID[]")}) AND t.disabled_at IS NOT NULL) AS disabled,
    ARRAY(SELECT t.id::text FROM {qualified(identity_tenants)} t
          WHERE t.id = ANY({_read.param("tenant_ids", "UUID[]")}) AND t.live_enabled) AS live,
    ARRAY(SELECT ROW(d.transfer_id, d.command_id) FROM {qualified(decisions)} d
          WHERE d.transfer_id = ANY({_read.param("transfer_ids", _TEXT)})
          UNION ALL
          SELECT ROW(h.transfer_id, h.command_id) FROM {qualified(cap_holds)} h
          WHERE h.transfer_id = ANY({_read.param("transfer_ids", _TEXT)})) AS taken
"""


class Stored(NamedTuple):
    """A decision already made: what it published (``out_payload``: None for an approved
    command, which is signed again from the command and the decision: it is kept once, by
    the ledger, not twice)."""

    command_id: str
    out_topic: str
    out_key: bytes | None
    out_partition: int | None
    out_payload: bytes | None
    id: str
    outcome: str
    rule: str


class PartyFound(NamedTuple):
    tenant_id: str
    mode: str
    party_id: str
    kind: str
    customer_id: str | None
    country_code: str | None


class ExternalFound(NamedTuple):
    id: str
    tenant_id: str
    mode: str
    customer_id: str
    rail: str
    currency: str
    approved: bool


@dataclass
class Wanted:
    """What a batch's commands name."""

    command_ids: set[str] = field(default_factory=set)
    addresses: set[str] = field(default_factory=set)
    external: set[Key] = field(default_factory=set)
    parties: set[Key] = field(default_factory=set)
    tenants: set[tuple[str, str]] = field(default_factory=set)
    usage: set[UsageKey] = field(default_factory=set)
    # every tenant of the batch's commands: which of them an operator disabled, which are live
    every_tenant: set[uuid.UUID] = field(default_factory=set)
    transfer_ids: set[str] = field(default_factory=set)  # which of them a command already holds


@dataclass
class BatchRead:
    stored: dict[str, Stored]
    screened: list[tuple[str, str]]  # (chain, address)
    external: list[ExternalFound]
    parties: list[PartyFound]
    routes: list[tuple[str, str, str, str]]  # (tenant_id, mode, rail, currency)
    caps: list[tuple[str, str, Decimal, Decimal, Decimal | None]]
    usage: dict[UsageKey, Decimal]  # locked until the batch commits
    disabled: set[str] = field(default_factory=set)  # tenants disabled by an operator
    live: set[str] = field(default_factory=set)  # tenants an operator enabled for production
    # transfer id -> the command holding it (None: a hold from before commands were recorded)
    taken: dict[str, str | None] = field(default_factory=dict)


def _columns(keys: Sequence[tuple[Any, ...]], prefix: str, names: Sequence[str]) -> dict[str, list[Any]]:
    return {f"{prefix}.{n}": [k[i] for k in keys] for i, n in enumerate(names)}


async def read_batch(session: AsyncSession, w: Wanted) -> BatchRead:
    """One statement: everything the batch's decisions read, and its cap usage locked."""
    values = {
        **_columns(sorted(w.external), "e", ("tenant_id", "mode", "id")),
        **_columns(sorted(w.parties), "p", ("tenant_id", "mode", "party_id")),
        **_columns(sorted(w.usage), "u", ("tenant_id", "mode", "currency", "day")),
        **_columns(sorted(w.tenants), "t", ("tenant_id", "mode")),
        "ids": sorted(w.command_ids),
        "tenant_ids": sorted(w.every_tenant),
        "addresses": sorted(w.addresses),
        "transfer_ids": sorted(w.transfer_ids),
    }
    [row] = await fetch(session, READ, _read.args(values))
    return BatchRead(
        {r[0]: Stored(*r) for r in row["stored"]},
        [(r[0], r[1]) for r in row["screened"]],
        [ExternalFound(*r) for r in row["external"]],
        [PartyFound(*r) for r in row["parties"]],
        [(r[0], r[1], r[2], r[3]) for r in row["routes"]],
        [(r[0], r[1], r[2], r[3], r[4]) for r in row["caps"]],
        {(r[0], r[1], r[2], r[3]): Decimal(r[4]) for r in row["usage"]},
        set(row["disabled"]),
        set(row["live"]),
        _holders(row["taken"]),
    )


def _holders(rows: Sequence[tuple[str, str | None]]) -> dict[str, str | None]:
    """Transfer id -> the command holding it: its decision's, else its hold's (None when the
    hold predates recording it)."""
    out: dict[str, str | None] = {}
    for transfer_id, command_id in rows:
        if out.get(transfer_id) is None:
            out[transfer_id] = command_id
    return out


_write = Statement()
WRITE = f"""
WITH pruned AS (
    DELETE FROM {qualified(outbox)} WHERE id = ANY({_write.param("pruned", "BIGINT[]")})
), usage AS (
    UPDATE {qualified(cap_usage)} u SET used = v.used
    FROM unnest({_write.param("u.tenant_id", _TEXT)}, {_write.param("u.mode", _TEXT)},
                {_write.param("u.currency", _TEXT)}, {_write.param("u.day", "DATE[]")},
                {_write.param("u.used", f"{pg_type(cap_usage.c.used)}[]")})
         AS v(tenant_id, mode, currency, day, used)
    WHERE u.tenant_id = v.tenant_id AND u.mode = v.mode AND u.currency = v.currency AND u.day = v.day
), registered AS (
    {_write.insert("p", parties, PARTY_COLUMNS, "ON CONFLICT (tenant_id, mode, party_id) DO NOTHING")}
), decided AS (
    {_write.insert("d", decisions, DECISION_COLUMNS, "ON CONFLICT (command_id) DO NOTHING")}
), sent AS (
    {_write.insert("o", outbox, OUTBOX_COLUMNS, "RETURNING id")}
)
SELECT id FROM sent
"""


@dataclass
class BatchWrite:
    """Everything a batch writes in its last statement (each part may be empty)."""

    usage: dict[UsageKey, Decimal] = field(default_factory=dict)
    parties: list[tuple[str, str, str, str, str | None, str | None]] = field(default_factory=list)
    decisions: list[dict[str, Any]] = field(default_factory=list)  # ``inputs`` as JSON text
    outbox: list[dict[str, Any]] = field(default_factory=list)
    pruned: list[int] = field(default_factory=list)


async def write_batch(session: AsyncSession, w: BatchWrite) -> list[int]:
    """One statement; the ids of the outbox rows, in the order given."""
    usage = sorted(w.usage.items())
    values = {
        "pruned": w.pruned,
        **_columns([(*k, used) for k, used in usage], "u", ("tenant_id", "mode", "currency", "day", "used")),
        **_columns(sorted(set(w.parties), key=lambda p: p[:3]), "p", PARTY_COLUMNS),
        **columns_of(decisions, w.decisions, "d", DECISION_COLUMNS, encoded=("inputs",)),
        **columns_of(outbox, w.outbox, "o", OUTBOX_COLUMNS),
    }
    return [r["id"] for r in await fetch(session, WRITE, _write.args(values))]

"""The tamper-evident journal (docs/security.md, "The tamper-evident journal"): one hash chain
per tenant and mode.

Every journal entry carries ``seq`` (its place in its chain, from 1) and ``hash``::

    hash = hex(SHA-256(previous_hash + "\\n" + canonical))     previous_hash of seq 1: 64 zeros

``canonical`` is one line of text (UTF-8), fields joined by ``|``. Entries are written in
version 2, which covers every field that moves money or says where it goes::

    v2|<entry id>|<tenant id>|<mode>|<kind>|<transfer id or empty>|<deposit id or empty>
      |<created_at: UTC, microseconds, YYYY-MM-DDTHH:MM:SS.ffffffZ>|<postings>|<transfer>

``<postings>``: every posting as ``<account id>,<currency>,<debit|credit>,<amount>`` joined by
``;``, in ascending order of that text; ``debit`` for a negative amount (money leaves the
account), ``credit`` otherwise; ``<amount>`` the absolute value with exactly six decimals
(``12.500000``).

``<transfer>``: empty for an entry of no transfer; else the transfer's terms as its row holds
them when the entry is written, joined by ``,``: ``<kind>,<route>,<currency>,<amount>,<fee
amount>,<source wallet id>,<destination wallet id or empty>,<destination>``, amounts with six
decimals, ``<destination>`` the stored destination object as JSON with sorted keys, no spaces,
ASCII only (``json.dumps(d, sort_keys=True, separators=(",", ":"))``). It is last, so nothing
it contains can shift another field. The terms never change after a transfer is created, so
every entry of a transfer (hold, completion, release, return) covers its destination: a
changed address or bank account breaks the chain at the transfer's first entry. The state
transition an entry makes is its ``kind`` (``<transfer|payout>_hold`` at creation, then
``<transfer|payout>_<state moved to>``); the row's current state is checked against its entries
by ``reconcile``.

Version 1 (the first entries of older chains) had neither currency nor transfer terms::

    v1|<entry id>|...|<created_at>|<account id>,<debit|credit>,<amount>;...

A verifier tries version 2 first, then version 1 only while no entry of the chain has matched
version 2: a chain switches version once, forwards. Rewriting entries in version 1 to drop the
destination from the hash means recomputing every later hash, which moves the chain away from
its anchors (``ledger.anchors``).

The chain is written in the same transaction as its entries (``journal.Journal.apply``):
the chain heads of the batch are locked after the wallet accounts, in key order, so batches
of different tenants never wait for each other and two ledger instances cannot deadlock.
``docs/verify_journal.py`` recomputes a chain from an export without Sluice.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

GENESIS = "0" * 64
VERSION = "v2"
VERSIONS = ("v2", "v1")  # the order a verifier tries them in
#: The transfer row's columns ``<transfer>`` covers, in order.
TRANSFER_FIELDS = (
    "kind",
    "route",
    "currency",
    "amount",
    "fee_amount",
    "source_wallet_id",
    "destination_wallet_id",
    "destination",
)


def _stamp(created_at: datetime) -> str:
    return created_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _side(amount: Decimal) -> str:
    return f"{'debit' if amount < 0 else 'credit'},{abs(amount):.6f}"


def canonical(
    entry_id: str,
    tenant_id: str,
    mode: str,
    kind: str,
    transfer_id: str | None,
    deposit_id: str | None,
    created_at: datetime,
    postings: Iterable[tuple[str, Decimal]],
) -> str:
    """The entry's canonical text in version 1 (kept to verify entries written before v2)."""
    lines = sorted(f"{account},{_side(amount)}" for account, amount in postings)
    fields = ["v1", entry_id, tenant_id, mode, kind, transfer_id or "", deposit_id or ""]
    return "|".join([*fields, _stamp(created_at), ";".join(lines)])


def canonical_v2(
    entry_id: str,
    tenant_id: str,
    mode: str,
    kind: str,
    transfer_id: str | None,
    deposit_id: str | None,
    created_at: datetime,
    postings: Iterable[tuple[str, str, Decimal]],
    transfer: str | None,
) -> str:
    """The entry's canonical text in version 2 (see the module docstring); ``transfer`` is
    :func:`transfer_text` of the entry's transfer, None for an entry of no transfer."""
    lines = sorted(f"{account},{currency},{_side(amount)}" for account, currency, amount in postings)
    fields = ["v2", entry_id, tenant_id, mode, kind, transfer_id or "", deposit_id or ""]
    return "|".join([*fields, _stamp(created_at), ";".join(lines), transfer or ""])


def transfer_text(row: Mapping[str, Any]) -> str:
    """``<transfer>`` of version 2 from a transfer row's :data:`TRANSFER_FIELDS`."""
    destination = json.dumps(row["destination"], sort_keys=True, separators=(",", ":"))
    return ",".join(
        [
            row["kind"],
            row["route"],
            row["currency"],
            f"{Decimal(row['amount']):.6f}",
            f"{Decimal(row['fee_amount']):.6f}",
            row["source_wallet_id"],
            row["destination_wallet_id"] or "",
            destination,
        ]
    )


def link(previous_hash: str, text: str) -> str:
    """The hash of an entry whose canonical text is ``text`` after ``previous_hash``."""
    return hashlib.sha256(f"{previous_hash}\n{text}".encode()).hexdigest()


def entry_version(e: Any, postings: list[Any], previous: str, v2_seen: bool) -> str | None:
    """The canonical version whose hash the entry carries (v1 only before the chain's first
    v2 entry), or None."""
    transfer = None
    if e.transfer_id and e.t_kind is not None:
        transfer = transfer_text({name: getattr(e, f"t_{name}") for name in TRANSFER_FIELDS})
    fields = (e.id, e.tenant_id, e.mode, e.kind, e.transfer_id, e.deposit_id, e.created_at)
    if e.hash == link(previous, canonical_v2(*fields, postings, transfer)):
        return "v2"
    if not v2_seen and e.hash == link(previous, canonical(*fields, [(a, x) for a, _, x in postings])):
        return "v1"
    return None

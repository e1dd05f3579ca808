"""The tamper-evident journal (contract 13.5): one hash chain per tenant and mode.

Every journal entry carries ``seq`` (its place in its chain, from 1) and ``hash``::

    hash = hex(SHA-256(previous_hash + "\\n" + canonical))     previous_hash of seq 1: 64 zeros

``canonical`` is one line of text (UTF-8), fields joined by ``|``::

    v1|<entry id>|<tenant id>|<mode>|<kind>|<transfer id or empty>|<deposit id or empty>
      |<created_at: UTC, microseconds, YYYY-MM-DDTHH:MM:SS.ffffffZ>|<postings>

``<postings>``: every posting as ``<account id>,<debit|credit>,<amount>`` joined by ``;``, in
ascending order of that text; ``debit`` for a negative amount (money leaves the account),
``credit`` otherwise; ``<amount>`` the absolute value with exactly six decimals (``12.500000``).

The chain is written in the same transaction as its entries (``journal.Journal.apply``):
the chain heads of the batch are locked after the wallet accounts, in key order, so batches
of different tenants never wait for each other and two ledger instances cannot deadlock.
``docs/verify_journal.py`` recomputes a chain from an export without Sluice.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from datetime import UTC, datetime
from decimal import Decimal

GENESIS = "0" * 64
VERSION = "v1"


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
    """The entry's canonical text (see the module docstring)."""
    stamp = created_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    lines = sorted(
        f"{account},{'debit' if amount < 0 else 'credit'},{abs(amount):.6f}" for account, amount in postings
    )
    fields = [
        VERSION,
        entry_id,
        tenant_id,
        mode,
        kind,
        transfer_id or "",
        deposit_id or "",
        stamp,
        ";".join(lines),
    ]
    return "|".join(fields)


def link(previous_hash: str, text: str) -> str:
    """The hash of an entry whose canonical text is ``text`` after ``previous_hash``."""
    return hashlib.sha256(f"{previous_hash}\n{text}".encode()).hexdigest()

"""The rows the core reads, as the core sees them: the attributes its decisions use, nothing
of how they were read.

The shell hands the core what its statements returned (the SQLModel rows of
``ledger.models``: ``Transfer``, ``Wallet``); a test hands it any object with these
attributes. The protocols keep the core free of the tables while mypy still checks that the
rows fit.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any, Protocol

from common.contracts.base import Mode


class TransferRow(Protocol):
    """A transfer or a payout: its terms (which the hash chain covers) and its state."""

    id: str
    tenant_id: str
    mode: Mode
    kind: str
    route: str
    state: str
    previous_state: str | None
    amount: Decimal
    fee_amount: Decimal
    currency: str
    source_wallet_id: str
    destination_wallet_id: str | None
    source: dict[str, Any]
    destination: dict[str, Any]
    developer_fee: dict[str, Any] | None
    idempotency_key: str
    created_at: datetime
    updated_at: datetime


class WalletRow(Protocol):
    """A wallet: whose it is and what it holds on which chain."""

    id: str
    tenant_id: str
    mode: Mode
    customer_id: str
    symbol: str
    chain: str
    deposit_address: str

"""Reconciliation in one action (docs/operations.md, "The administration endpoint"): does one
tenant's money add up?

Per currency, money brought in less money sent out (``journal_total``, from the postings of
the deposit, payout and settlement accounts) must equal what the tenant's wallets hold
(``balances_total`` + ``holds_total``, the stored balances) plus its developer fees
(``fee_total``); ``difference`` is what is missing or extra. Besides the totals, four
invariants are checked row by row and every offender is listed, never fixed:

- ``balance_equals_postings``: every wallet account's stored balance is the sum of its
  postings, and is not below zero;
- ``entry_balances``: every journal entry's postings sum to zero in each currency;
- ``transfer_matches_state``: every transfer's postings on its source wallet match its state
  (held while pending, in review or processing; spent once completed; given back once
  failed, rejected or returned);
- ``transfer_history``: every transfer's recorded state changes are one path from
  ``pending`` to its state. A transfer is created, with its ``*.created`` event, in the
  transaction that inserts it, and each change is recorded in the transaction that stages its
  ``*.updated`` event in the outbox (relayed until published): an unbroken path means every
  event of the transfer was committed for delivery. Delivery itself is the webhooks
  service's (its events API and delivery log).

The last result is exported as ``sluice_reconcile_ok`` and ``sluice_reconcile_discrepancies``.
"""

from __future__ import annotations

import time
from decimal import Decimal
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from common.contracts.commands import Reconcile
from common.errors import invalid
from common.metrics import RECONCILE_DISCREPANCIES, RECONCILE_LAST_RUN, RECONCILE_OK
from ledger.config import LedgerConfig
from ledger.core.effects import Effects, money
from ledger.repository import audit


async def reconcile(session: AsyncSession, cmd: Reconcile, ledger_config: LedgerConfig) -> Effects:
    tenant_id, mode = cmd.ctx.tenant_id, cmd.ctx.mode
    if not tenant_id:
        raise invalid("tenant_id", "reconcile names one tenant")
    limit = max(1, min(cmd.limit, 1000))
    currencies = []
    found: list[dict[str, Any]] = []
    for currency, t in (await audit.currency_totals(session, tenant_id, mode)).items():
        difference = t["journal_total"] - t["balances_total"] - t["holds_total"] - t["fee_total"]
        currencies.append({"currency": currency, **{k: money(v) for k, v in t.items()}})
        currencies[-1]["difference"] = money(difference)
        if difference:
            found.append({"check": "currency_totals", "currency": currency, "difference": money(difference)})
    for account_id, wallet_id, currency, balance, posted in await audit.unequal_accounts(
        session, tenant_id, mode, limit
    ):
        found.append(
            {
                "check": "balance_equals_postings",
                "wallet_id": wallet_id,
                "account_id": account_id,
                "currency": currency,
                "balance": money(Decimal(balance)),
                "postings_total": money(Decimal(posted)),
            }
        )
    for entry_id, currency, total in await audit.unbalanced_entries(session, tenant_id, mode, limit):
        found.append(
            {"check": "entry_balances", "entry_id": entry_id, "currency": currency, "total": _text(total)}
        )
    for transfer_id, state, amount, held, spent in await audit.mismatched_transfers(
        session, tenant_id, mode, limit
    ):
        found.append(
            {
                "check": "transfer_matches_state",
                "transfer_id": transfer_id,
                "state": state,
                "amount": money(Decimal(amount)),
                "held": _text(held),
                "available_change": _text(spent),
            }
        )
    for transfer_id, state, last, jumps in await audit.broken_histories(session, tenant_id, mode, limit):
        found.append(
            {
                "check": "transfer_history",
                "transfer_id": transfer_id,
                "state": state,
                "last_recorded_state": last,
                "changes_out_of_sequence": jumps,
            }
        )
    RECONCILE_OK.set(0 if found else 1)
    RECONCILE_DISCREPANCIES.set(len(found))
    RECONCILE_LAST_RUN.set(time.time())
    data = {
        "ok": not found,
        "tenant_id": tenant_id,
        "mode": mode,
        "currencies": currencies,
        "discrepancies": found,
    }
    return Effects(200, data)


def _text(value: Any) -> str:
    """A signed decimal as text (``money`` keeps the sign; an absent sum is zero)."""
    return money(Decimal(value or 0))

"""What a transfer or a payout looks like to partners, and the events its decisions emit
(``transfer.created`` / ``transfer.updated``, ``payout.created`` / ``payout.updated``).

Pure: a planned transfer's events are decided with its plan, before any row exists
(``ledger.core.transfers``), and a stored row's by ``ledger.states.transition``; both read the
same view.
"""

from __future__ import annotations

from typing import Any

from common.contracts.base import Event
from common.contracts.events import PayoutCreated, PayoutUpdated, TransferCreated, TransferUpdated
from common.ids import new_id
from common.times import iso
from ledger.core.effects import money, now_iso
from ledger.core.rows import TransferRow

TransferEvent = PayoutCreated | PayoutUpdated | TransferCreated | TransferUpdated


def transfer_view(r: TransferRow) -> dict[str, Any]:
    """A transfer or a payout as partners read it (reads and event data)."""
    out = {
        "transfer_id": r.id,
        "state": r.state,
        "provider": "service",
        "source": r.source,
        "destination": r.destination,
        "amount": money(r.amount),
        "currency": r.currency,
        "idempotency_key": r.idempotency_key,
        "created_at": iso(r.created_at),
        "updated_at": iso(r.updated_at),
    }
    if r.developer_fee:
        out["developer_fee"] = r.developer_fee
        out["developer_fee_amount"] = money(r.fee_amount)
    return out


def transfer_event(
    t: TransferRow,
    kinds: tuple[type[TransferEvent], type[TransferEvent]],
    request_id: str | None,
    **extra: Any,
) -> Event:
    """The event of a transfer or a payout (``kinds``: the payout's class, the transfer's):
    its view, with ``extra`` fields added."""
    cls = kinds[0] if t.kind == "payout" else kinds[1]
    data = {**transfer_view(t), **extra}
    return cls(
        event_id=new_id("evt"),
        tenant_id=t.tenant_id,
        mode=t.mode,
        created_at=now_iso(),
        request_id=request_id,
        data=data,
    )


def created_event(t: TransferRow, request_id: str | None) -> Event:
    return transfer_event(t, (PayoutCreated, TransferCreated), request_id)


def updated_event(t: TransferRow, request_id: str | None) -> Event:
    return transfer_event(t, (PayoutUpdated, TransferUpdated), request_id, previous_state=t.previous_state)

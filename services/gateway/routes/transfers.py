"""POST /v1/transfers and POST /v1/payouts (one request shape, ``kind`` tells them apart)."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Literal

from common.contracts.commands import CreateTransfer, DeveloperFee
from common.errors import invalid
from common.fees import developer_fee_amount
from common.ids import new_id
from common.topics import Topic
from common.validation import bounded_decimal
from gateway import rules
from gateway.pipeline import Call, Endpoint
from gateway.routes.base import body_of, stamp
from gateway.schemas import Transfer, TransferCreate


def _fee(call: Call, p: TransferCreate, currency: str, amount: str) -> DeveloperFee | None:
    """The fee's parts, checked; the fee they make must be below the amount (docs/guides/money.md,
    "Developer fees")."""
    if p.developer_fee is None:
        return None
    flat = p.developer_fee.flat_amount
    if flat is not None:
        rules.check_amount("developer_fee.flat_amount", flat, currency)
    percentage = None
    if p.developer_fee.percentage is not None:
        raw = call.body["developer_fee"]["percentage"]  # as decoded (Decimal or str), not the float
        percentage = bounded_decimal(
            "developer_fee.percentage", raw, places=4, low=Decimal(0), high=Decimal(100)
        )
    fee = developer_fee_amount(
        Decimal(amount),
        Decimal(percentage) if percentage is not None else None,
        Decimal(flat) if flat is not None else None,
        rules.decimals_for(currency),
    )
    if fee >= Decimal(amount):
        raise invalid(
            "developer_fee",
            f"developer_fee must come to less than the amount: {fee} is not less than {amount}",
        )
    return DeveloperFee(percentage=percentage, flat_amount=flat)


def _builder(kind: Literal["transfer", "payout"], prefix: str) -> Callable[[Call], CreateTransfer]:
    def build(call: Call) -> CreateTransfer:
        p = body_of(call, TransferCreate)
        if call.ctx.idempotency_key is not None and p.idempotency_key != call.ctx.idempotency_key:
            raise invalid("idempotency_key", "idempotency_key must equal the Idempotency-Key header")
        source, destination = rules.transfer_parties(kind, p.source, p.destination)
        assert source.amount is not None
        return CreateTransfer(
            **stamp(call),
            transfer_id=new_id(prefix),
            kind=kind,
            source=source,
            destination=destination,
            amount=source.amount,
            currency=source.currency,
            idempotency_key=p.idempotency_key,
            developer_fee=_fee(call, p, source.currency, source.amount),
        )

    return build


def _create(kind: Literal["transfer", "payout"], prefix: str, summary: str) -> Endpoint:
    """``POST /v1/<kind>s``: decided by compliance first, then booked by the ledger."""
    path, scope, build = f"/v1/{kind}s", f"{kind}s:write", _builder(kind, prefix)
    return Endpoint(
        "POST",
        path,
        scope,
        build,
        Topic.COMPLIANCE_COMMANDS,
        summary,
        TransferCreate,
        Transfer,
        status=201,
    )


ENDPOINTS = [
    _create("transfer", "tr", "Move USDC or USDT between wallets the tenant owns"),
    _create("payout", "po", "Pay an approved external account (ACH, wire, SEPA, Faster Payments)"),
]

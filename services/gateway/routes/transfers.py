"""POST /v1/transfers and POST /v1/payouts (one request shape, ``kind`` tells them apart)."""

from __future__ import annotations

from decimal import Decimal

from common.contracts.commands import CreateTransfer, DeveloperFee
from common.errors import invalid
from common.ids import new_id
from common.validation import bounded_decimal
from gateway import rules
from gateway.pipeline import Call, Endpoint
from gateway.routes.base import body_of, stamp
from gateway.schemas import TransferCreate, TransferCreated


def _fee(call: Call, p: TransferCreate, currency: str) -> DeveloperFee | None:
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
    return DeveloperFee(percentage=percentage, flat_amount=flat)


def _builder(kind: str, prefix: str):  # type: ignore[no-untyped-def]
    def build(call: Call) -> CreateTransfer:
        p = body_of(call, TransferCreate)
        if call.ctx.idempotency_key is not None and p.idempotency_key != call.ctx.idempotency_key:
            raise invalid("idempotency_key", "idempotency_key differs from the Idempotency-Key header")
        source, destination = rules.transfer_parties(kind, p.source, p.destination)
        assert source.amount is not None
        return CreateTransfer(
            **stamp(call),
            transfer_id=new_id(prefix),
            kind=kind,  # type: ignore[arg-type]
            source=source,
            destination=destination,
            amount=source.amount,
            currency=source.currency,
            idempotency_key=p.idempotency_key,
            developer_fee=_fee(call, p, source.currency),
        )

    return build


ENDPOINTS = [
    Endpoint(
        "POST",
        "/v1/transfers",
        "transfers:write",
        _builder("transfer", "tr"),
        "compliance_commands",
        summary="Move USDC or USDT between wallets the tenant owns",
        request=TransferCreate,
        response=TransferCreated,
        status=201,
    ),
    Endpoint(
        "POST",
        "/v1/payouts",
        "payouts:write",
        _builder("payout", "po"),
        "compliance_commands",
        summary="Pay an approved external account (ACH, wire, SEPA, Faster Payments)",
        request=TransferCreate,
        response=TransferCreated,
        status=201,
    ),
]

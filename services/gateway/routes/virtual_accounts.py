"""POST /v1/virtual-accounts and POST /v1/sandbox/deposits."""

from __future__ import annotations

from common.contracts.commands import CreateVirtualAccount, SandboxDeposit
from common.ids import new_id
from common.topics import Topic
from gateway import rules
from gateway.pipeline import Call, Endpoint
from gateway.routes.base import body_of, stamp
from gateway.schemas import (
    SandboxDepositCreate,
    SandboxDepositReceived,
    VirtualAccount,
    VirtualAccountCreate,
)


def build_create(call: Call) -> CreateVirtualAccount:
    p = body_of(call, VirtualAccountCreate)
    currency = p.currency.upper()
    return CreateVirtualAccount(
        **stamp(call),
        virtual_account_id=new_id("va"),
        customer_id=p.customer_id,
        currency=currency,
        destination=rules.va_destination(p.destination, currency),
    )


def build_deposit(call: Call) -> SandboxDeposit:
    p = body_of(call, SandboxDepositCreate)
    rules.check_amount("amount", p.amount, "USD")  # fiat deposits: 2 decimal places
    return SandboxDeposit(
        **stamp(call), deposit_id=new_id("dep"), virtual_account_id=p.virtual_account_id, amount=p.amount
    )


ENDPOINTS = [
    Endpoint(
        "POST",
        "/v1/virtual-accounts",
        "virtual_accounts:write",
        build_create,
        Topic.COMPLIANCE_COMMANDS,
        summary="Create a fiat virtual account routed to a wallet",
        request=VirtualAccountCreate,
        response=VirtualAccount,
        status=201,
    ),
    Endpoint(
        "POST",
        "/v1/sandbox/deposits",
        "virtual_accounts:write",
        build_deposit,
        Topic.COMPLIANCE_COMMANDS,
        summary="Sandbox only: simulate a fiat deposit into a virtual account "
        "(production: 404). Scope virtual_accounts:write.",
        request=SandboxDepositCreate,
        response=SandboxDepositReceived,
        status=201,
        sandbox_only=True,
    ),
]

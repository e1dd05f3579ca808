"""POST /v1/wallets (reads are in :mod:`gateway.routes.resources`)."""

from __future__ import annotations

from common.contracts.commands import CreateWallet
from common.ids import new_id
from common.topics import Topic
from gateway import rules
from gateway.pipeline import Call, Endpoint
from gateway.routes.base import body_of, stamp
from gateway.schemas import Wallet, WalletCreate


def build_create(call: Call) -> CreateWallet:
    p = body_of(call, WalletCreate)
    symbol, chain = p.symbol.upper(), p.chain.upper()
    rules.check_pair("chain", symbol, chain)
    return CreateWallet(
        **stamp(call), wallet_id=new_id("wal"), customer_id=p.customer_id, symbol=symbol, chain=chain
    )


ENDPOINTS = [
    Endpoint(
        "POST",
        "/v1/wallets",
        "wallets:write",
        build_create,
        Topic.COMPLIANCE_COMMANDS,
        summary="Create a stablecoin wallet for a customer",
        request=WalletCreate,
        response=Wallet,
        status=201,
    ),
]

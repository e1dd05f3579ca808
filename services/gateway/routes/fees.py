"""Money read-outs (docs/guides/money.md): ``GET /v1/fee-balances`` (the developer fees the tenant
has earned, per currency) and ``GET /v1/wallets/{id}/transactions`` (a wallet's statement)."""

from __future__ import annotations

from common.contracts.commands import GetFeeBalances, ListWalletTransactions
from common.topics import Topic
from gateway.pipeline import Call, Endpoint
from gateway.routes.base import path_id, query_of, stamp
from gateway.schemas import FeeBalance, HealthQuery, StatementQuery, WalletTransaction


def build(call: Call) -> GetFeeBalances:
    query_of(call, HealthQuery)  # no query parameters
    return GetFeeBalances(**stamp(call))


def build_statement(call: Call) -> ListWalletTransactions:
    q = query_of(call, StatementQuery)
    return ListWalletTransactions(
        **stamp(call), wallet_id=path_id(call, "wallet_id"), limit=q.limit, starting_after=q.starting_after
    )


ENDPOINTS = [
    Endpoint(
        "GET",
        "/v1/wallets/{wallet_id}/transactions",
        "wallets:write",
        build_statement,
        Topic.LEDGER_READS,
        summary="A wallet's statement: the movements of its available balance, newest first, each "
        "with balance_after (the newest one's equals available_balance)",
        response=WalletTransaction,
        query=StatementQuery,
        listing=True,
    ),
    Endpoint(
        "GET",
        "/v1/fee-balances",
        "transfers:write",
        build,
        Topic.LEDGER_READS,
        summary="The tenant's developer-fee balance per currency (every currency it has earned in)",
        response=FeeBalance,
        listing=True,
    ),
]

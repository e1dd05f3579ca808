"""Reads of ledger resources: ``GET /v1/<resource>/{id}`` and ``GET /v1/<resource>``
(cursor pagination, newest first). Reads need the resource's write scope, no Idempotency-Key,
and count towards the rate limit."""

from __future__ import annotations

from collections.abc import Callable

from common.contracts.commands import GetResource, ListResources
from common.topics import Topic
from gateway.pipeline import Call, Endpoint
from gateway.routes.base import path_id, query_of, stamp
from gateway.schemas import Customer, ListQuery, Transfer, VirtualAccount, Wallet

# path segment -> (scope, id parameter name, response struct, singular)
RESOURCES = {
    "customers": ("customers:write", "customer_id", Customer, "customer"),
    "wallets": ("wallets:write", "wallet_id", Wallet, "wallet"),
    "virtual-accounts": ("virtual_accounts:write", "virtual_account_id", VirtualAccount, "virtual account"),
    "transfers": ("transfers:write", "transfer_id", Transfer, "transfer"),
    "payouts": ("payouts:write", "transfer_id", Transfer, "payout"),
}


def _get(resource: str, param: str) -> Callable[[Call], GetResource]:
    def build(call: Call) -> GetResource:
        return GetResource(**stamp(call), resource=resource, resource_id=path_id(call, param))

    return build


def _list(resource: str) -> Callable[[Call], ListResources]:
    def build(call: Call) -> ListResources:
        q = query_of(call, ListQuery)
        return ListResources(**stamp(call), resource=resource, limit=q.limit, starting_after=q.starting_after)

    return build


ENDPOINTS: list[Endpoint] = []
for _res, (_scope, _param, _resp, _name) in RESOURCES.items():
    ENDPOINTS += [
        Endpoint(
            "GET",
            f"/v1/{_res}/{{{_param}}}",
            _scope,
            _get(_res, _param),
            Topic.LEDGER_READS,
            summary=f"Get a {_name} by id",
            response=_resp,
        ),
        Endpoint(
            "GET",
            f"/v1/{_res}",
            _scope,
            _list(_res),
            Topic.LEDGER_READS,
            summary=f"List {_name}s, newest first",
            response=_resp,
            query=ListQuery,
            listing=True,
        ),
    ]

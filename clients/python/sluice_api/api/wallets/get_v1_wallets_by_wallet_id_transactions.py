from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error_envelope import ErrorEnvelope
from ...models.get_v1_wallets_by_wallet_id_transactions_response_200 import (
    GetV1WalletsByWalletIdTransactionsResponse200,
)
from ...models.service_mode import ServiceMode
from ...types import UNSET, Response, Unset


def _get_kwargs(
    wallet_id: str,
    *,
    limit: int | Unset = 10,
    starting_after: None | str | Unset = UNSET,
    x_service_mode: ServiceMode | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(x_service_mode, Unset):
        headers["x-service-mode"] = str(x_service_mode)

    params: dict[str, Any] = {}

    params["limit"] = limit

    json_starting_after: None | str | Unset
    if isinstance(starting_after, Unset):
        json_starting_after = UNSET
    else:
        json_starting_after = starting_after
    params["starting_after"] = json_starting_after

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/wallets/{wallet_id}/transactions".format(
            wallet_id=quote(str(wallet_id), safe=""),
        ),
        "params": params,
    }

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ErrorEnvelope | GetV1WalletsByWalletIdTransactionsResponse200 | None:
    if response.status_code == 200:
        response_200 = GetV1WalletsByWalletIdTransactionsResponse200.from_dict(response.json())

        return response_200

    if response.status_code == 400:
        response_400 = ErrorEnvelope.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = ErrorEnvelope.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = ErrorEnvelope.from_dict(response.json())

        return response_403

    if response.status_code == 404:
        response_404 = ErrorEnvelope.from_dict(response.json())

        return response_404

    if response.status_code == 405:
        response_405 = ErrorEnvelope.from_dict(response.json())

        return response_405

    if response.status_code == 429:
        response_429 = ErrorEnvelope.from_dict(response.json())

        return response_429

    if response.status_code == 500:
        response_500 = ErrorEnvelope.from_dict(response.json())

        return response_500

    if response.status_code == 502:
        response_502 = ErrorEnvelope.from_dict(response.json())

        return response_502

    if response.status_code == 503:
        response_503 = ErrorEnvelope.from_dict(response.json())

        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[ErrorEnvelope | GetV1WalletsByWalletIdTransactionsResponse200]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    wallet_id: str,
    *,
    client: AuthenticatedClient,
    limit: int | Unset = 10,
    starting_after: None | str | Unset = UNSET,
    x_service_mode: ServiceMode | Unset = UNSET,
) -> Response[ErrorEnvelope | GetV1WalletsByWalletIdTransactionsResponse200]:
    """A wallet's statement: the movements of its available balance, newest first, each with balance_after
    (the newest one's equals available_balance)

     Scope: wallets:write. Also reachable as POST / with x-service-route:
    /v1/wallets/{wallet_id}/transactions and body {"method": "GET"}.

    Args:
        wallet_id (str):
        limit (int | Unset):  Default: 10.
        starting_after (None | str | Unset):
        x_service_mode (ServiceMode | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorEnvelope | GetV1WalletsByWalletIdTransactionsResponse200]
    """

    kwargs = _get_kwargs(
        wallet_id=wallet_id,
        limit=limit,
        starting_after=starting_after,
        x_service_mode=x_service_mode,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    wallet_id: str,
    *,
    client: AuthenticatedClient,
    limit: int | Unset = 10,
    starting_after: None | str | Unset = UNSET,
    x_service_mode: ServiceMode | Unset = UNSET,
) -> ErrorEnvelope | GetV1WalletsByWalletIdTransactionsResponse200 | None:
    """A wallet's statement: the movements of its available balance, newest first, each with balance_after
    (the newest one's equals available_balance)

     Scope: wallets:write. Also reachable as POST / with x-service-route:
    /v1/wallets/{wallet_id}/transactions and body {"method": "GET"}.

    Args:
        wallet_id (str):
        limit (int | Unset):  Default: 10.
        starting_after (None | str | Unset):
        x_service_mode (ServiceMode | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorEnvelope | GetV1WalletsByWalletIdTransactionsResponse200
    """

    return sync_detailed(
        wallet_id=wallet_id,
        client=client,
        limit=limit,
        starting_after=starting_after,
        x_service_mode=x_service_mode,
    ).parsed


async def asyncio_detailed(
    wallet_id: str,
    *,
    client: AuthenticatedClient,
    limit: int | Unset = 10,
    starting_after: None | str | Unset = UNSET,
    x_service_mode: ServiceMode | Unset = UNSET,
) -> Response[ErrorEnvelope | GetV1WalletsByWalletIdTransactionsResponse200]:
    """A wallet's statement: the movements of its available balance, newest first, each with balance_after
    (the newest one's equals available_balance)

     Scope: wallets:write. Also reachable as POST / with x-service-route:
    /v1/wallets/{wallet_id}/transactions and body {"method": "GET"}.

    Args:
        wallet_id (str):
        limit (int | Unset):  Default: 10.
        starting_after (None | str | Unset):
        x_service_mode (ServiceMode | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorEnvelope | GetV1WalletsByWalletIdTransactionsResponse200]
    """

    kwargs = _get_kwargs(
        wallet_id=wallet_id,
        limit=limit,
        starting_after=starting_after,
        x_service_mode=x_service_mode,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    wallet_id: str,
    *,
    client: AuthenticatedClient,
    limit: int | Unset = 10,
    starting_after: None | str | Unset = UNSET,
    x_service_mode: ServiceMode | Unset = UNSET,
) -> ErrorEnvelope | GetV1WalletsByWalletIdTransactionsResponse200 | None:
    """A wallet's statement: the movements of its available balance, newest first, each with balance_after
    (the newest one's equals available_balance)

     Scope: wallets:write. Also reachable as POST / with x-service-route:
    /v1/wallets/{wallet_id}/transactions and body {"method": "GET"}.

    Args:
        wallet_id (str):
        limit (int | Unset):  Default: 10.
        starting_after (None | str | Unset):
        x_service_mode (ServiceMode | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorEnvelope | GetV1WalletsByWalletIdTransactionsResponse200
    """

    return (
        await asyncio_detailed(
            wallet_id=wallet_id,
            client=client,
            limit=limit,
            starting_after=starting_after,
            x_service_mode=x_service_mode,
        )
    ).parsed

from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error_envelope import ErrorEnvelope
from ...models.get_v1_events_order import GetV1EventsOrder
from ...models.get_v1_events_response_200 import GetV1EventsResponse200
from ...models.service_mode import ServiceMode
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    limit: int | Unset = 10,
    starting_after: None | str | Unset = UNSET,
    type_: None | str | Unset = UNSET,
    order: GetV1EventsOrder | Unset = GetV1EventsOrder.DESC,
    ending_before: None | str | Unset = UNSET,
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

    json_type_: None | str | Unset
    if isinstance(type_, Unset):
        json_type_ = UNSET
    else:
        json_type_ = type_
    params["type"] = json_type_

    json_order: str | Unset = UNSET
    if not isinstance(order, Unset):
        json_order = order.value

    params["order"] = json_order

    json_ending_before: None | str | Unset
    if isinstance(ending_before, Unset):
        json_ending_before = UNSET
    else:
        json_ending_before = ending_before
    params["ending_before"] = json_ending_before

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/events",
        "params": params,
    }

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ErrorEnvelope | GetV1EventsResponse200 | None:
    if response.status_code == 200:
        response_200 = GetV1EventsResponse200.from_dict(response.json())

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
) -> Response[ErrorEnvelope | GetV1EventsResponse200]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    limit: int | Unset = 10,
    starting_after: None | str | Unset = UNSET,
    type_: None | str | Unset = UNSET,
    order: GetV1EventsOrder | Unset = GetV1EventsOrder.DESC,
    ending_before: None | str | Unset = UNSET,
    x_service_mode: ServiceMode | Unset = UNSET,
) -> Response[ErrorEnvelope | GetV1EventsResponse200]:
    """List events by sequence, newest first or oldest first with order=asc (the same id and body as their
    webhook deliveries; kept 30 days), optionally of one type

     Scope: webhooks:write. Also reachable as POST / with x-service-route: /v1/events and body {"method":
    "GET"}.

    Args:
        limit (int | Unset):  Default: 10.
        starting_after (None | str | Unset):
        type_ (None | str | Unset):
        order (GetV1EventsOrder | Unset): desc: newest first (the default); asc: oldest first
            Default: GetV1EventsOrder.DESC.
        ending_before (None | str | Unset):
        x_service_mode (ServiceMode | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorEnvelope | GetV1EventsResponse200]
    """

    kwargs = _get_kwargs(
        limit=limit,
        starting_after=starting_after,
        type_=type_,
        order=order,
        ending_before=ending_before,
        x_service_mode=x_service_mode,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    limit: int | Unset = 10,
    starting_after: None | str | Unset = UNSET,
    type_: None | str | Unset = UNSET,
    order: GetV1EventsOrder | Unset = GetV1EventsOrder.DESC,
    ending_before: None | str | Unset = UNSET,
    x_service_mode: ServiceMode | Unset = UNSET,
) -> ErrorEnvelope | GetV1EventsResponse200 | None:
    """List events by sequence, newest first or oldest first with order=asc (the same id and body as their
    webhook deliveries; kept 30 days), optionally of one type

     Scope: webhooks:write. Also reachable as POST / with x-service-route: /v1/events and body {"method":
    "GET"}.

    Args:
        limit (int | Unset):  Default: 10.
        starting_after (None | str | Unset):
        type_ (None | str | Unset):
        order (GetV1EventsOrder | Unset): desc: newest first (the default); asc: oldest first
            Default: GetV1EventsOrder.DESC.
        ending_before (None | str | Unset):
        x_service_mode (ServiceMode | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorEnvelope | GetV1EventsResponse200
    """

    return sync_detailed(
        client=client,
        limit=limit,
        starting_after=starting_after,
        type_=type_,
        order=order,
        ending_before=ending_before,
        x_service_mode=x_service_mode,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    limit: int | Unset = 10,
    starting_after: None | str | Unset = UNSET,
    type_: None | str | Unset = UNSET,
    order: GetV1EventsOrder | Unset = GetV1EventsOrder.DESC,
    ending_before: None | str | Unset = UNSET,
    x_service_mode: ServiceMode | Unset = UNSET,
) -> Response[ErrorEnvelope | GetV1EventsResponse200]:
    """List events by sequence, newest first or oldest first with order=asc (the same id and body as their
    webhook deliveries; kept 30 days), optionally of one type

     Scope: webhooks:write. Also reachable as POST / with x-service-route: /v1/events and body {"method":
    "GET"}.

    Args:
        limit (int | Unset):  Default: 10.
        starting_after (None | str | Unset):
        type_ (None | str | Unset):
        order (GetV1EventsOrder | Unset): desc: newest first (the default); asc: oldest first
            Default: GetV1EventsOrder.DESC.
        ending_before (None | str | Unset):
        x_service_mode (ServiceMode | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorEnvelope | GetV1EventsResponse200]
    """

    kwargs = _get_kwargs(
        limit=limit,
        starting_after=starting_after,
        type_=type_,
        order=order,
        ending_before=ending_before,
        x_service_mode=x_service_mode,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    limit: int | Unset = 10,
    starting_after: None | str | Unset = UNSET,
    type_: None | str | Unset = UNSET,
    order: GetV1EventsOrder | Unset = GetV1EventsOrder.DESC,
    ending_before: None | str | Unset = UNSET,
    x_service_mode: ServiceMode | Unset = UNSET,
) -> ErrorEnvelope | GetV1EventsResponse200 | None:
    """List events by sequence, newest first or oldest first with order=asc (the same id and body as their
    webhook deliveries; kept 30 days), optionally of one type

     Scope: webhooks:write. Also reachable as POST / with x-service-route: /v1/events and body {"method":
    "GET"}.

    Args:
        limit (int | Unset):  Default: 10.
        starting_after (None | str | Unset):
        type_ (None | str | Unset):
        order (GetV1EventsOrder | Unset): desc: newest first (the default); asc: oldest first
            Default: GetV1EventsOrder.DESC.
        ending_before (None | str | Unset):
        x_service_mode (ServiceMode | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorEnvelope | GetV1EventsResponse200
    """

    return (
        await asyncio_detailed(
            client=client,
            limit=limit,
            starting_after=starting_after,
            type_=type_,
            order=order,
            ending_before=ending_before,
            x_service_mode=x_service_mode,
        )
    ).parsed

from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error_envelope import ErrorEnvelope
from ...models.get_v1_events_by_event_id_response_200 import GetV1EventsByEventIdResponse200
from ...models.service_mode import ServiceMode
from ...types import UNSET, Response, Unset


def _get_kwargs(
    event_id: str,
    *,
    x_service_mode: ServiceMode | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(x_service_mode, Unset):
        headers["x-service-mode"] = str(x_service_mode)

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/events/{event_id}".format(
            event_id=quote(str(event_id), safe=""),
        ),
    }

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ErrorEnvelope | GetV1EventsByEventIdResponse200 | None:
    if response.status_code == 200:
        response_200 = GetV1EventsByEventIdResponse200.from_dict(response.json())

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
) -> Response[ErrorEnvelope | GetV1EventsByEventIdResponse200]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    event_id: str,
    *,
    client: AuthenticatedClient,
    x_service_mode: ServiceMode | Unset = UNSET,
) -> Response[ErrorEnvelope | GetV1EventsByEventIdResponse200]:
    """Get one event: exactly the body its webhook deliveries carry

     Scope: webhooks:write. Also reachable as POST / with x-service-route: /v1/events/{event_id} and body
    {"method": "GET"}.

    Args:
        event_id (str):
        x_service_mode (ServiceMode | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorEnvelope | GetV1EventsByEventIdResponse200]
    """

    kwargs = _get_kwargs(
        event_id=event_id,
        x_service_mode=x_service_mode,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    event_id: str,
    *,
    client: AuthenticatedClient,
    x_service_mode: ServiceMode | Unset = UNSET,
) -> ErrorEnvelope | GetV1EventsByEventIdResponse200 | None:
    """Get one event: exactly the body its webhook deliveries carry

     Scope: webhooks:write. Also reachable as POST / with x-service-route: /v1/events/{event_id} and body
    {"method": "GET"}.

    Args:
        event_id (str):
        x_service_mode (ServiceMode | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorEnvelope | GetV1EventsByEventIdResponse200
    """

    return sync_detailed(
        event_id=event_id,
        client=client,
        x_service_mode=x_service_mode,
    ).parsed


async def asyncio_detailed(
    event_id: str,
    *,
    client: AuthenticatedClient,
    x_service_mode: ServiceMode | Unset = UNSET,
) -> Response[ErrorEnvelope | GetV1EventsByEventIdResponse200]:
    """Get one event: exactly the body its webhook deliveries carry

     Scope: webhooks:write. Also reachable as POST / with x-service-route: /v1/events/{event_id} and body
    {"method": "GET"}.

    Args:
        event_id (str):
        x_service_mode (ServiceMode | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorEnvelope | GetV1EventsByEventIdResponse200]
    """

    kwargs = _get_kwargs(
        event_id=event_id,
        x_service_mode=x_service_mode,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    event_id: str,
    *,
    client: AuthenticatedClient,
    x_service_mode: ServiceMode | Unset = UNSET,
) -> ErrorEnvelope | GetV1EventsByEventIdResponse200 | None:
    """Get one event: exactly the body its webhook deliveries carry

     Scope: webhooks:write. Also reachable as POST / with x-service-route: /v1/events/{event_id} and body
    {"method": "GET"}.

    Args:
        event_id (str):
        x_service_mode (ServiceMode | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorEnvelope | GetV1EventsByEventIdResponse200
    """

    return (
        await asyncio_detailed(
            event_id=event_id,
            client=client,
            x_service_mode=x_service_mode,
        )
    ).parsed

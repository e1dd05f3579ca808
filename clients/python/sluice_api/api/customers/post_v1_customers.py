from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.business_customer_create import BusinessCustomerCreate
from ...models.error_envelope import ErrorEnvelope
from ...models.individual_customer_create import IndividualCustomerCreate
from ...models.post_v1_customers_response_201 import PostV1CustomersResponse201
from ...models.service_mode import ServiceMode
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    body: BusinessCustomerCreate | IndividualCustomerCreate,
    x_service_mode: ServiceMode | Unset = UNSET,
    idempotency_key: str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(x_service_mode, Unset):
        headers["x-service-mode"] = str(x_service_mode)

    if not isinstance(idempotency_key, Unset):
        headers["Idempotency-Key"] = idempotency_key

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/customers",
    }

    if isinstance(body, IndividualCustomerCreate):
        _kwargs["json"] = body.to_dict()
    else:
        _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ErrorEnvelope | PostV1CustomersResponse201 | None:
    if response.status_code == 201:
        response_201 = PostV1CustomersResponse201.from_dict(response.json())

        return response_201

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

    if response.status_code == 409:
        response_409 = ErrorEnvelope.from_dict(response.json())

        return response_409

    if response.status_code == 413:
        response_413 = ErrorEnvelope.from_dict(response.json())

        return response_413

    if response.status_code == 415:
        response_415 = ErrorEnvelope.from_dict(response.json())

        return response_415

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
) -> Response[ErrorEnvelope | PostV1CustomersResponse201]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    body: BusinessCustomerCreate | IndividualCustomerCreate,
    x_service_mode: ServiceMode | Unset = UNSET,
    idempotency_key: str | Unset = UNSET,
) -> Response[ErrorEnvelope | PostV1CustomersResponse201]:
    """Create a customer (individual or business)

     Scope: customers:write. Also reachable as POST / with x-service-route: /v1/customers.

    Args:
        x_service_mode (ServiceMode | Unset):
        idempotency_key (str | Unset):
        body (BusinessCustomerCreate | IndividualCustomerCreate):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorEnvelope | PostV1CustomersResponse201]
    """

    kwargs = _get_kwargs(
        body=body,
        x_service_mode=x_service_mode,
        idempotency_key=idempotency_key,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    body: BusinessCustomerCreate | IndividualCustomerCreate,
    x_service_mode: ServiceMode | Unset = UNSET,
    idempotency_key: str | Unset = UNSET,
) -> ErrorEnvelope | PostV1CustomersResponse201 | None:
    """Create a customer (individual or business)

     Scope: customers:write. Also reachable as POST / with x-service-route: /v1/customers.

    Args:
        x_service_mode (ServiceMode | Unset):
        idempotency_key (str | Unset):
        body (BusinessCustomerCreate | IndividualCustomerCreate):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorEnvelope | PostV1CustomersResponse201
    """

    return sync_detailed(
        client=client,
        body=body,
        x_service_mode=x_service_mode,
        idempotency_key=idempotency_key,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: BusinessCustomerCreate | IndividualCustomerCreate,
    x_service_mode: ServiceMode | Unset = UNSET,
    idempotency_key: str | Unset = UNSET,
) -> Response[ErrorEnvelope | PostV1CustomersResponse201]:
    """Create a customer (individual or business)

     Scope: customers:write. Also reachable as POST / with x-service-route: /v1/customers.

    Args:
        x_service_mode (ServiceMode | Unset):
        idempotency_key (str | Unset):
        body (BusinessCustomerCreate | IndividualCustomerCreate):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorEnvelope | PostV1CustomersResponse201]
    """

    kwargs = _get_kwargs(
        body=body,
        x_service_mode=x_service_mode,
        idempotency_key=idempotency_key,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    body: BusinessCustomerCreate | IndividualCustomerCreate,
    x_service_mode: ServiceMode | Unset = UNSET,
    idempotency_key: str | Unset = UNSET,
) -> ErrorEnvelope | PostV1CustomersResponse201 | None:
    """Create a customer (individual or business)

     Scope: customers:write. Also reachable as POST / with x-service-route: /v1/customers.

    Args:
        x_service_mode (ServiceMode | Unset):
        idempotency_key (str | Unset):
        body (BusinessCustomerCreate | IndividualCustomerCreate):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorEnvelope | PostV1CustomersResponse201
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
            x_service_mode=x_service_mode,
            idempotency_key=idempotency_key,
        )
    ).parsed

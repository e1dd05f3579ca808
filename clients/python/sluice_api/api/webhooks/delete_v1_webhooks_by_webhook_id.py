from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.delete_v1_webhooks_by_webhook_id_response_200 import DeleteV1WebhooksByWebhookIdResponse200
from ...models.error_envelope import ErrorEnvelope
from ...models.service_mode import ServiceMode
from ...types import UNSET, Response, Unset


def _get_kwargs(
    webhook_id: str,
    *,
    x_service_mode: ServiceMode | Unset = UNSET,
    idempotency_key: str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(x_service_mode, Unset):
        headers["x-service-mode"] = str(x_service_mode)

    if not isinstance(idempotency_key, Unset):
        headers["Idempotency-Key"] = idempotency_key

    _kwargs: dict[str, Any] = {
        "method": "delete",
        "url": "/v1/webhooks/{webhook_id}".format(
            webhook_id=quote(str(webhook_id), safe=""),
        ),
    }

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> DeleteV1WebhooksByWebhookIdResponse200 | ErrorEnvelope | None:
    if response.status_code == 200:
        response_200 = DeleteV1WebhooksByWebhookIdResponse200.from_dict(response.json())

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
) -> Response[DeleteV1WebhooksByWebhookIdResponse200 | ErrorEnvelope]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    webhook_id: str,
    *,
    client: AuthenticatedClient,
    x_service_mode: ServiceMode | Unset = UNSET,
    idempotency_key: str | Unset = UNSET,
) -> Response[DeleteV1WebhooksByWebhookIdResponse200 | ErrorEnvelope]:
    """Delete a webhook endpoint: answered once with status deleted; afterwards it is not found, not
    listed, and sent nothing (its pending deliveries end)

     Scope: webhooks:write. Also reachable as POST / with x-service-route: /v1/webhooks/{webhook_id}.

    Args:
        webhook_id (str):
        x_service_mode (ServiceMode | Unset):
        idempotency_key (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[DeleteV1WebhooksByWebhookIdResponse200 | ErrorEnvelope]
    """

    kwargs = _get_kwargs(
        webhook_id=webhook_id,
        x_service_mode=x_service_mode,
        idempotency_key=idempotency_key,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    webhook_id: str,
    *,
    client: AuthenticatedClient,
    x_service_mode: ServiceMode | Unset = UNSET,
    idempotency_key: str | Unset = UNSET,
) -> DeleteV1WebhooksByWebhookIdResponse200 | ErrorEnvelope | None:
    """Delete a webhook endpoint: answered once with status deleted; afterwards it is not found, not
    listed, and sent nothing (its pending deliveries end)

     Scope: webhooks:write. Also reachable as POST / with x-service-route: /v1/webhooks/{webhook_id}.

    Args:
        webhook_id (str):
        x_service_mode (ServiceMode | Unset):
        idempotency_key (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        DeleteV1WebhooksByWebhookIdResponse200 | ErrorEnvelope
    """

    return sync_detailed(
        webhook_id=webhook_id,
        client=client,
        x_service_mode=x_service_mode,
        idempotency_key=idempotency_key,
    ).parsed


async def asyncio_detailed(
    webhook_id: str,
    *,
    client: AuthenticatedClient,
    x_service_mode: ServiceMode | Unset = UNSET,
    idempotency_key: str | Unset = UNSET,
) -> Response[DeleteV1WebhooksByWebhookIdResponse200 | ErrorEnvelope]:
    """Delete a webhook endpoint: answered once with status deleted; afterwards it is not found, not
    listed, and sent nothing (its pending deliveries end)

     Scope: webhooks:write. Also reachable as POST / with x-service-route: /v1/webhooks/{webhook_id}.

    Args:
        webhook_id (str):
        x_service_mode (ServiceMode | Unset):
        idempotency_key (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[DeleteV1WebhooksByWebhookIdResponse200 | ErrorEnvelope]
    """

    kwargs = _get_kwargs(
        webhook_id=webhook_id,
        x_service_mode=x_service_mode,
        idempotency_key=idempotency_key,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    webhook_id: str,
    *,
    client: AuthenticatedClient,
    x_service_mode: ServiceMode | Unset = UNSET,
    idempotency_key: str | Unset = UNSET,
) -> DeleteV1WebhooksByWebhookIdResponse200 | ErrorEnvelope | None:
    """Delete a webhook endpoint: answered once with status deleted; afterwards it is not found, not
    listed, and sent nothing (its pending deliveries end)

     Scope: webhooks:write. Also reachable as POST / with x-service-route: /v1/webhooks/{webhook_id}.

    Args:
        webhook_id (str):
        x_service_mode (ServiceMode | Unset):
        idempotency_key (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        DeleteV1WebhooksByWebhookIdResponse200 | ErrorEnvelope
    """

    return (
        await asyncio_detailed(
            webhook_id=webhook_id,
            client=client,
            x_service_mode=x_service_mode,
            idempotency_key=idempotency_key,
        )
    ).parsed

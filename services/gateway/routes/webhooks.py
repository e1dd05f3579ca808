"""Webhook endpoints: create (the signing secret is shown once), get, list, change, delete,
rotate the secret."""

from __future__ import annotations

from common.contracts.commands import (
    CreateWebhook,
    DeleteWebhook,
    GetWebhook,
    ListWebhooks,
    RotateWebhookSecret,
    UpdateWebhook,
)
from common.errors import invalid
from common.ids import new_id
from common.topics import Topic
from gateway.pipeline import Call, Endpoint
from gateway.routes.base import body_of, path_id, query_of, stamp
from gateway.schemas import (
    Empty,
    ListQuery,
    Webhook,
    WebhookCreate,
    WebhookCreated,
    WebhookSecretRotated,
    WebhookUpdate,
)

SCOPE = "webhooks:write"
TOPIC = Topic.WEBHOOKS_COMMANDS


def build_create(call: Call) -> CreateWebhook:
    p = body_of(call, WebhookCreate)
    return CreateWebhook(
        **stamp(call), webhook_id=new_id("wh"), endpoint_url=p.endpoint_url, enabled_events=p.enabled_events
    )


def build_get(call: Call) -> GetWebhook:
    return GetWebhook(**stamp(call), webhook_id=path_id(call, "webhook_id"))


def build_list(call: Call) -> ListWebhooks:
    q = query_of(call, ListQuery)
    return ListWebhooks(**stamp(call), limit=q.limit, starting_after=q.starting_after)


def build_update(call: Call) -> UpdateWebhook:
    webhook_id = path_id(call, "webhook_id")
    p = body_of(call, WebhookUpdate)
    if p.endpoint_url is None and p.enabled_events is None and p.status is None:
        raise invalid(
            "body",
            "the request body must name at least one of endpoint_url, enabled_events or status",
            reason="empty",
        )
    return UpdateWebhook(
        **stamp(call),
        webhook_id=webhook_id,
        endpoint_url=p.endpoint_url,
        enabled_events=p.enabled_events,
        status=p.status,
    )


def build_delete(call: Call) -> DeleteWebhook:
    return DeleteWebhook(**stamp(call), webhook_id=path_id(call, "webhook_id"))


def build_rotate(call: Call) -> RotateWebhookSecret:
    webhook_id = path_id(call, "webhook_id")
    body_of(call, Empty)
    return RotateWebhookSecret(**stamp(call), webhook_id=webhook_id)


ENDPOINTS = [
    Endpoint(
        "POST",
        "/v1/webhooks",
        SCOPE,
        build_create,
        TOPIC,
        summary="Register a webhook endpoint; the signing secret is returned once",
        request=WebhookCreate,
        response=WebhookCreated,
        status=201,
    ),
    Endpoint(
        "GET",
        "/v1/webhooks/{webhook_id}",
        SCOPE,
        build_get,
        TOPIC,
        summary="Get a webhook endpoint (no secret)",
        response=Webhook,
    ),
    Endpoint(
        "GET",
        "/v1/webhooks",
        SCOPE,
        build_list,
        TOPIC,
        summary="List webhook endpoints, newest first",
        response=Webhook,
        query=ListQuery,
        listing=True,
    ),
    Endpoint(
        "PATCH",
        "/v1/webhooks/{webhook_id}",
        SCOPE,
        build_update,
        TOPIC,
        summary="Change a webhook endpoint: its URL, its event types, or its status (disabled: "
        "nothing is delivered to it until it is enabled again)",
        request=WebhookUpdate,
        response=Webhook,
    ),
    Endpoint(
        "DELETE",
        "/v1/webhooks/{webhook_id}",
        SCOPE,
        build_delete,
        TOPIC,
        summary="Delete a webhook endpoint: answered once with status deleted; afterwards it is "
        "not found, not listed, and sent nothing (its pending deliveries end)",
        response=Webhook,
    ),
    Endpoint(
        "POST",
        "/v1/webhooks/{webhook_id}/rotate-secret",
        SCOPE,
        build_rotate,
        TOPIC,
        summary="Rotate the signing secret; the new secret is returned once (the old one "
        "keeps signing alongside for a while)",
        request=Empty,
        response=WebhookSecretRotated,
    ),
]

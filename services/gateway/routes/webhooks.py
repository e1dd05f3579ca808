"""Webhook endpoints: create (the signing secret is shown once), get, list, rotate the secret."""

from __future__ import annotations

from common.contracts.commands import CreateWebhook, GetWebhook, ListWebhooks, RotateWebhookSecret
from common.ids import new_id
from common.topics import Topic
from gateway.pipeline import Call, Endpoint
from gateway.routes.base import body_of, path_id, query_of, stamp
from gateway.schemas import Empty, ListQuery, Webhook, WebhookCreate, WebhookCreated

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
        "POST",
        "/v1/webhooks/{webhook_id}/rotate-secret",
        SCOPE,
        build_rotate,
        TOPIC,
        summary="Rotate the signing secret; the new secret is returned once (the old one "
        "keeps signing alongside for a while)",
        request=Empty,
        response=WebhookCreated,
    ),
]

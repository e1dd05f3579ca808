"""The events API (docs/guides/webhooks.md, "Missed a delivery? The Events API"): every event of
the tenant and mode, as delivered to webhook endpoints, kept 30 days; partners reconcile missed
webhooks with it."""

from __future__ import annotations

from common.contracts.commands import GetEvent, ListEvents
from common.topics import Topic
from gateway.pipeline import Call, Endpoint
from gateway.routes.base import path_id, query_of, stamp
from gateway.schemas import EventEnvelope, EventListQuery

SCOPE = "webhooks:write"
TOPIC = Topic.WEBHOOKS_COMMANDS


def build_list(call: Call) -> ListEvents:
    q = query_of(call, EventListQuery)
    return ListEvents(
        **stamp(call),
        event_type=q.type,
        limit=q.limit,
        starting_after=q.starting_after,
        ending_before=q.ending_before,
        order=q.order,
    )


def build_get(call: Call) -> GetEvent:
    return GetEvent(**stamp(call), event_id=path_id(call, "event_id"))


ENDPOINTS = [
    Endpoint(
        "GET",
        "/v1/events",
        SCOPE,
        build_list,
        TOPIC,
        summary="List events by sequence, newest first or oldest first with order=asc (the same "
        "id and body as their webhook deliveries; kept 30 days), optionally of one type",
        response=EventEnvelope,
        query=EventListQuery,
        listing=True,
    ),
    Endpoint(
        "GET",
        "/v1/events/{event_id}",
        SCOPE,
        build_get,
        TOPIC,
        summary="Get one event: exactly the body its webhook deliveries carry",
        response=EventEnvelope,
    ),
]

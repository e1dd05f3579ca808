"""Managing a webhook endpoint, the parts decided without a database: what a PATCH changes
(webhooks.service.changes_of), the status an endpoint shows, the gateway's PATCH and DELETE
routes (builders, router, OpenAPI document, routed form) and the SDK methods they become."""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Any, cast

import pytest
from litestar import Litestar

from common.contracts import Ctx
from common.contracts.commands import DeleteWebhook, UpdateWebhook
from common.contracts.events import DELIVERED_EVENT_TYPES
from common.errors import ServiceError
from gateway.app import ENDPOINTS, _direct_handlers
from gateway.openapi.document import build_document
from gateway.pipeline import Call
from gateway.routes import webhooks as routes
from gateway.transport import ROUTED_METHODS, Router
from tools.codegen import clients, sdk_resources
from webhooks import repository as repo
from webhooks.service import Changes, changes_of, endpoint_status

pytestmark = pytest.mark.unit

CTX = Ctx(request_id="r", tenant_id="t", mode="sandbox")
URL = "https://partner.example/hooks"


def row(enabled: bool = True, deleted: bool = False, url: str = URL) -> Any:
    return SimpleNamespace(url=url, enabled=enabled, deleted_at="2026-01-01" if deleted else None)


def update(**fields: Any) -> UpdateWebhook:
    return UpdateWebhook(command_id="c", ctx=CTX, webhook_id="wh_1", **fields)


def test_a_patch_changes_only_what_differs() -> None:
    """Broken when the same URL is vetted again, or enabling an enabled endpoint rewrites it."""
    assert changes_of(row(), update(endpoint_url=URL, status="enabled")) == Changes(None, repo.KEEP, None)
    moved = changes_of(row(), update(endpoint_url=URL + "/v2"))
    assert moved.url == URL + "/v2" and moved.event_types is repo.KEEP and moved.enable is None
    assert changes_of(row(), update(status="disabled")).enable is False
    assert changes_of(row(enabled=False), update(status="enabled")).enable is True
    assert changes_of(row(enabled=False), update(status="disabled")).enable is None


def test_event_types_are_checked_and_every_type_is_stored_as_none() -> None:
    narrowed = changes_of(row(), update(enabled_events=["transfer.updated", "transfer.created"]))
    assert narrowed.event_types == ["transfer.created", "transfer.updated"]
    assert changes_of(row(), update(enabled_events=list(DELIVERED_EVENT_TYPES))).event_types is None
    with pytest.raises(ServiceError) as unknown:
        changes_of(row(), update(enabled_events=["transfer.exploded"]))
    assert unknown.value.details == {"field": "enabled_events", "reason": "unknown_event_type"}


def test_a_patch_that_names_nothing_is_refused() -> None:
    with pytest.raises(ServiceError) as info:
        changes_of(row(), update())
    assert info.value.details == {"field": "body", "reason": "empty"}


def test_an_endpoint_shows_deleted_before_disabled() -> None:
    assert endpoint_status(row()) == "enabled"
    assert endpoint_status(row(enabled=False)) == "disabled"
    assert endpoint_status(row(enabled=False, deleted=True)) == "deleted"


def call(body: Any = None, webhook_id: str = "wh_1") -> Call:
    """What the builders read of a request: its body, path parameters and context."""
    return cast(Call, SimpleNamespace(body=body, params={"webhook_id": webhook_id}, ctx=CTX, query={}))


def test_the_gateway_builds_update_and_delete_commands() -> None:
    built = routes.build_update(call({"status": "disabled", "enabled_events": ["transfer.created"]}))
    assert isinstance(built, UpdateWebhook) and built.webhook_id == "wh_1"
    assert (built.status, built.enabled_events, built.endpoint_url) == (
        "disabled",
        ["transfer.created"],
        None,
    )
    assert isinstance(routes.build_delete(call()), DeleteWebhook)
    for body, field in (({}, "body"), ({"status": None}, "body"), ({"status": "deleted"}, "status")):
        with pytest.raises(ServiceError) as info:
            routes.build_update(call(body))
        assert info.value.details["field"] == field, body
    with pytest.raises(ServiceError) as unknown:
        routes.build_update(call({"url": URL}))
    assert unknown.value.code == "invalid_request"
    with pytest.raises(ServiceError) as missing:
        routes.build_delete(call(webhook_id="../x"))
    assert missing.value.code == "not_found"


def test_patch_and_delete_are_routed_and_documented() -> None:
    router = Router(ENDPOINTS)
    for method in ("GET", "PATCH", "DELETE"):
        found = router.match(method, "/v1/webhooks/wh_1")
        assert found is not None and found[0].method == method and found[1] == {"webhook_id": "wh_1"}
    assert {"PATCH", "DELETE"} <= set(ROUTED_METHODS)
    doc = build_document(ENDPOINTS)
    ops = doc["paths"]["/v1/webhooks/{webhook_id}"]
    assert set(ops) == {"get", "patch", "delete"}
    for method in ("patch", "delete"):
        assert "Idempotency-Key" in {p["name"] for p in ops[method]["parameters"]}
        data = ops[method]["responses"]["200"]["content"]["application/json"]["schema"]["properties"]["data"]
        assert data == {"$ref": "#/components/schemas/Webhook"}
    assert "requestBody" not in ops["delete"]
    body = ops["patch"]["requestBody"]["content"]["application/json"]["schema"]
    assert body["allOf"][0] == {"$ref": "#/components/schemas/WebhookUpdate"}
    webhook = doc["components"]["schemas"]["Webhook"]
    assert sorted(webhook["properties"]["status"]["enum"]) == ["deleted", "disabled", "enabled"]
    method = doc["components"]["schemas"]["RoutedBody"]["properties"]["method"]["pattern"]
    assert all(re.match(method, m.lower()) for m in ROUTED_METHODS)


def test_every_path_registers_with_litestar() -> None:
    """Broken when a path with DELETE takes Litestar's default 204, which refuses at startup a
    handler that answers a body (the gateway would not start)."""
    app = Litestar(route_handlers=_direct_handlers(ENDPOINTS))
    methods = {m for r in app.routes if r.path == "/v1/webhooks/{webhook_id:str}" for m in r.methods}
    assert {"GET", "PATCH", "DELETE"} <= methods


def test_the_sdks_name_them_update_and_delete() -> None:
    ops = {
        (o.resource, o.verb): o for o in sdk_resources.operations(clients.for_generators(clients.document()))
    }
    update_op, delete_op = ops[("webhooks", "update")], ops[("webhooks", "delete")]
    assert (update_op.method, update_op.body, update_op.answer) == ("PATCH", "WebhookUpdate", "Webhook")
    assert (delete_op.method, delete_op.body, delete_op.answer) == ("DELETE", None, "Webhook")
    assert ops[("webhooks", "retrieve")].method == "GET"

"""The admin service's OpenAPI 3.1 document: ``POST /`` with one body per ``action``.

Built from the same msgspec structs the actions decode with (``admin.schemas``), one
component per action with ``action`` fixed to its name, joined by ``oneOf`` with a
discriminator, so the document lists every action and cannot drift from the validation.
"""

from __future__ import annotations

import copy
from typing import Any

import msgspec

from admin import schemas
from admin.actions.table import ACTIONS
from common.http import success_json

_REF = "#/components/schemas/{name}"

# The struct each action decodes its body with (admin/{tenants,keys,policy,operations}.py).
REQUESTS: dict[str, type] = {
    "upsert_tenant": schemas.UpsertTenant,
    "get_tenant": schemas.TenantRef,
    "list_tenants": schemas.ListTenants,
    "enable_live": schemas.TenantRef,
    "create_api_key": schemas.CreateApiKey,
    "revoke_api_key": schemas.RevokeApiKey,
    "issue_access_token": schemas.IssueAccessToken,
    "revoke_access_token": schemas.RevokeAccessToken,
    "disable_tenant": schemas.TenantRef,
    "enable_tenant": schemas.TenantRef,
    "approve_route": schemas.Route,
    "revoke_route": schemas.Route,
    "set_transfer_cap": schemas.TransferCap,
    "upsert_external_account": schemas.ExternalAccount,
    "list_decisions": schemas.ListDecisions,
    "review_transfer": schemas.ReviewTransfer,
    "replay_delivery": schemas.ReplayDelivery,
    "enable_webhook": schemas.EnableWebhook,
    "list_deliveries": schemas.ListDeliveries,
    "list_audit_log": schemas.ListAuditLog,
    "replay_deliveries": schemas.ReplayDeliveries,
    "list_dead_letters": schemas.ListDeadLetters,
    "redrive_dead_letters": schemas.RedriveDeadLetters,
    "settle_transfer": schemas.SettleTransfer,
    "reconcile": schemas.Reconcile,
    "verify_journal": schemas.VerifyJournal,
    "add_screened_address": schemas.AddScreenedAddress,
    "remove_screened_address": schemas.ScreenedAddress,
    "list_screened_addresses": schemas.ListScreenedAddresses,
    "approve_action": schemas.ApproveAction,
    "list_pending_actions": schemas.ListPendingActions,
}

# Rules across fields that a struct cannot state, written into the action's schema so that a
# client generated from the document (or schemathesis) sends only what is accepted.
CONSTRAINTS: dict[str, dict[str, Any]] = {
    # by tenant_id when given, else a new tenant by tenant_name (admin/actions/tenants.py)
    "upsert_tenant": {
        "anyOf": [
            {"required": ["tenant_id"], "properties": {"tenant_id": {"type": "string"}}},
            {"required": ["tenant_name"]},
        ]
    },
    # dead_letter_ids, or all: true, not both (admin/actions/dead_letters.py)
    "redrive_dead_letters": {
        "anyOf": [
            {
                "required": ["dead_letter_ids"],
                "properties": {"dead_letter_ids": {"type": "array"}, "all": {"const": False}},
            },
            {
                "required": ["all"],
                "properties": {"all": {"const": True}, "dead_letter_ids": {"type": "null"}},
            },
        ]
    },
}

_ERROR = {
    "type": "object",
    "required": ["success", "error"],
    "properties": {
        "success": {"const": False},
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {
                "code": {"type": "string"},
                "message": {"type": "string"},
                "details": {"type": "object", "description": "field, reason and request_id"},
            },
        },
    },
}
_ERRORS = {
    "400": "invalid_request: unknown action or a field that fails validation (details.field)",
    "401": "unauthorized: operator token missing or unknown",
    "403": "forbidden: the operator's role may not run this action",
    "404": "not_found: the tenant, key, transfer, delivery or webhook does not exist",
    "409": "conflict with the current state (details.reason)",
    "413": "request body too large",
    "415": "Content-Type is not application/json",
    "500": "internal_error",
    "503": "provider_unavailable: a downstream service did not answer in time, or a store was"
    " unavailable (details.reason store_unavailable; retry)",
}
_REQUEST_ID = {"X-Request-Id": {"required": True, "schema": {"type": "string"}}}


def _component(action: str) -> str:
    return "".join(part.title() for part in action.split("_")) + "Request"


def build_document(version: str = "1.0.0") -> dict[str, Any]:
    missing = set(ACTIONS) - set(REQUESTS)
    if missing:  # a new action must say what body it takes
        raise RuntimeError(f"admin actions without a documented body: {sorted(missing)}")
    structs = sorted(set(REQUESTS.values()), key=lambda t: t.__name__)
    _, shared = msgspec.json.schema_components(structs, ref_template=_REF)
    components: dict[str, Any] = {n: s for n, s in shared.items() if n not in {t.__name__ for t in structs}}
    mapping = {}
    for action, struct in sorted(REQUESTS.items()):
        schema = copy.deepcopy(shared[struct.__name__])
        schema["properties"]["action"] = {"type": "string", "const": action}
        schema["title"] = action
        schema.update(copy.deepcopy(CONSTRAINTS.get(action, {})))
        components[_component(action)] = schema
        mapping[action] = _REF.format(name=_component(action))
    components["ErrorEnvelope"] = _ERROR
    body = {
        "oneOf": [{"$ref": ref} for ref in mapping.values()],
        "discriminator": {"propertyName": "action", "mapping": mapping},
    }
    responses: dict[str, Any] = {"200": success_json("the action's result", _REQUEST_ID)}
    for code, text in _ERRORS.items():
        responses[code] = {
            "description": text,
            "headers": _REQUEST_ID,
            "content": {"application/json": {"schema": {"$ref": _REF.format(name="ErrorEnvelope")}}},
        }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Sluice Admin API",
            "version": version,
            "description": "Operator API: POST / with an operator token and "
            "a body naming its action. Every call, refused or not, is audited.",
        },
        "tags": [{"name": "admin", "description": "Tenants, keys, policy and operations"}],
        "paths": {
            "/": {
                "post": {
                    "operationId": "administer",
                    "summary": "Run one operator action: " + ", ".join(sorted(REQUESTS)),
                    "tags": ["admin"],
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": body,
                                "example": {"action": "get_tenant", "tenant_id": "ten_01hxyz"},
                            }
                        },
                    },
                    "responses": responses,
                    "security": [{"operator": []}],
                }
            },
            "/healthz": {"get": _probe("liveness")},
            "/readyz": {"get": _probe("readiness: database, Redis and Kafka reachable")},
        },
        "components": {
            "schemas": components,
            "securitySchemes": {
                "operator": {"type": "http", "scheme": "bearer", "description": "an operator token"}
            },
        },
    }


def _probe(what: str) -> dict[str, Any]:
    return {
        "operationId": what.split(":")[0],
        "summary": what,
        "tags": ["admin"],
        "security": [],
        "responses": {
            "200": {"description": "ok", "content": {"application/json": {"schema": {"type": "object"}}}},
            "503": {
                "description": "unavailable",
                "content": {"application/json": {"schema": {"type": "object"}}},
            },
        },
    }

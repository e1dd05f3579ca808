"""The OpenAPI 3.1 document, generated from the endpoint table and the msgspec structs.

Handlers take raw bodies (so the direct and routed forms share one decoding path), which
leaves Litestar's generator nothing to describe; instead every :class:`Endpoint` carries its
request, query and response structs, and ``msgspec.json.schema_components`` turns those into
JSON Schema: the same structs that validate requests, so the document cannot drift from them.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from common.http import success_json
from common.validation import ci_pattern
from gateway.openapi.examples import EXAMPLES, NOTES
from gateway.openapi.rules import request_rules
from gateway.pipeline import Endpoint
from gateway.schemas import IDEMPOTENCY_KEY_PATTERN, UNIONS, ErrorEnvelope
from gateway.transport import ROUTED_METHODS

_PARAM = re.compile(r"\{(\w+)\}")
REQUEST_RULES = request_rules()
_REF = "#/components/schemas/{name}"
_ERRORS = {
    "400": "invalid_request (details.field names the field) or idempotency_key_required",
    "401": "unauthorized: bearer credential missing, invalid, expired or revoked",
    "403": "forbidden: mode, scope, IP allowlist, policy or compliance refusal (details.reason)",
    "404": "not_found: unknown route, or an id this tenant and mode does not own",
    "405": "invalid_request: method not allowed on this path",
    "429": "rate_limited: retry after the window resets (Retry-After)",
    "500": "internal_error",
    "502": "provider_error: a downstream service rejected the command unexpectedly",
    "503": "provider_unavailable, details.reason naming why: overloaded (shed at the door),"
    " upstream_timeout (no answer within the gateway timeout), store_unavailable, or in_flight (the"
    " same key is being decided); retry with the same Idempotency-Key after Retry-After",
}
_MUTATING_ERRORS = {
    "409": "idempotency_replay_mismatch: this Idempotency-Key was used with another request",
    "413": "invalid_request: body over 64 KiB",
    "415": "invalid_request: Content-Type is not application/json",
}
_RATE_HEADERS = {
    "X-Request-Id": {
        "required": True,
        "schema": {"type": "string"},
        "description": "the caller's X-Request-Id if it is 1-128 of [A-Za-z0-9._:-], else generated",
    },
    "X-RateLimit-Limit": {
        "schema": {"type": "integer"},
        "description": "requests allowed per minute for this tenant and mode (after authentication)",
    },
    "X-RateLimit-Remaining": {"schema": {"type": "integer"}, "description": "left in this window"},
    "X-RateLimit-Reset": {
        "schema": {"type": "integer"},
        "description": "unix seconds when the window resets",
    },
}
_RETRY_AFTER = {
    "schema": {"type": "integer", "minimum": 0},
    "description": "seconds to wait before retrying (RFC 9110 section 10.2.3)",
}
_REPLAY = {
    "X-Idempotent-Replay": {
        "schema": {"type": "string", "const": "true"},
        "description": "present when this answer is the recorded outcome of an earlier request "
        "with the same Idempotency-Key",
    }
}
_EXTRA_HEADERS: dict[str, dict[str, Any]] = {
    "401": {
        "WWW-Authenticate": {"required": True, "schema": {"type": "string", "const": "Bearer"}},
    },
    "405": {
        "Allow": {
            "required": True,
            "schema": {"type": "string"},
            "description": "the methods this path supports (RFC 9110 section 10.2.1)",
        }
    },
    "429": {"Retry-After": {**_RETRY_AFTER, "required": True}},
    "503": {"Retry-After": _RETRY_AFTER},
}
TAGS = [
    {"name": "health", "description": "Credential check and rate-limit state"},
    {"name": "customers", "description": "End users and businesses of a tenant"},
    {"name": "wallets", "description": "Stablecoin wallets (symbol and chain pairs offered)"},
    {"name": "virtual-accounts", "description": "Fiat accounts whose deposits convert into a wallet"},
    {"name": "transfers", "description": "Wallet to wallet movements of USDC and USDT"},
    {"name": "payouts", "description": "Payouts to approved external bank accounts"},
    {"name": "webhooks", "description": "Signed event deliveries (Standard Webhooks)"},
    {"name": "events", "description": "Every event of the last 30 days, as webhooks deliver them"},
    {"name": "fee-balances", "description": "Developer fees collected, per currency"},
    {"name": "sandbox", "description": "Sandbox-only simulations; production answers 404"},
    {"name": "onboarding", "description": "Hosted signup links for end users"},
    {"name": "routed", "description": "Every endpoint through POST / and x-service-route"},
]
_TAG_NAMES = {t["name"] for t in TAGS}


def _tag(path: str) -> str:
    first = path.strip("/").split("/")[1] if path.count("/") > 1 else "routed"
    first = {"onboarding-authorizations": "onboarding"}.get(first, first)
    return first if first in _TAG_NAMES else "routed"


def _headers_for(code: str, mutating: bool) -> dict[str, Any]:
    return {**_RATE_HEADERS, **_EXTRA_HEADERS.get(code, {}), **(_REPLAY if mutating else {})}


# Cross-field rules JSON Schema can state (the rest are in the field descriptions).
_CONDITIONS: dict[str, dict[str, Any]] = {
    "VADestinationIn": {
        "anyOf": [
            {"required": ["rail", "address"]},
            {"required": ["payment_rail", "provider_wallet_id"]},
            {"required": ["payment_rail", "address"]},
        ]
    },
}


def _header(name: str, required: bool, schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"name": name, "in": "header", "required": required, "schema": schema, "description": description}


_MODE = _header(
    "x-service-mode",
    False,
    {"type": "string", "enum": ["sandbox", "production"]},
    "must equal the credential's mode when present (else 403)",
)
_IDEM = _header(
    "Idempotency-Key",
    True,
    {"type": "string", "pattern": IDEMPOTENCY_KEY_PATTERN},
    "8-256 printable ASCII characters, no space first or last (HTTP drops those); same key + "
    "same request replays the outcome",
)


_UNION_NAMES = {id(t): name for name, t in UNIONS.items()}


def _name(t: Any) -> str:
    """A struct's name, or the name a request union is given (gateway.schemas.UNIONS)."""
    return _UNION_NAMES[id(t)] if id(t) in _UNION_NAMES else str(t.__name__)


def _ref(t: Any) -> dict[str, Any]:
    return {"$ref": _REF.format(name=_name(t))}


def _pages_both_ways(ep: Endpoint) -> bool:
    """A list that takes ``ending_before`` (the events) also answers ``has_more``."""
    return ep.query is not None and "ending_before" in getattr(ep.query, "__struct_fields__", ())


def _success(ep: Endpoint) -> dict[str, Any]:
    data: dict[str, Any] = _ref(ep.response) if ep.response else {"type": "object"}
    if ep.listing:
        data = {
            "type": "object",
            "required": ["items", "next_cursor"],
            "properties": {
                "items": {"type": "array", "items": data},
                "next_cursor": {"type": ["string", "null"]},
            },
        }
        if _pages_both_ways(ep):
            data["required"].append("has_more")
            data["properties"]["has_more"] = {
                "type": "boolean",
                "description": "more items lie beyond this page in the direction it was read",
            }
    return {
        "type": "object",
        "required": ["success", "data"],
        "properties": {"success": {"const": True}, "data": data},
    }


def _error(code: str, description: str, mutating: bool) -> dict[str, Any]:
    return {
        "description": description,
        "headers": _headers_for(code, mutating),
        "content": {"application/json": {"schema": _ref(ErrorEnvelope)}},
    }


def _query_params(t: type) -> list[dict[str, Any]]:
    schema = msgspec.json.schema(t, ref_template=_REF)
    props = schema.get("$defs", {}).get(t.__name__, schema).get("properties", {})
    return [{"name": n, "in": "query", "required": False, "schema": s} for n, s in props.items()]


def _operation(ep: Endpoint) -> dict[str, Any]:
    params: list[dict[str, Any]] = [
        {"name": n, "in": "path", "required": True, "schema": {"type": "string"}}
        for n in _PARAM.findall(ep.path)
    ]
    params.append(_MODE)
    if ep.mutating:
        params.append(_IDEM)
    if ep.query is not None:
        params += _query_params(ep.query)
    responses: dict[str, Any] = {
        str(ep.status): {
            "description": "success",
            "headers": _headers_for(str(ep.status), ep.mutating),
            "content": {"application/json": {"schema": _success(ep)}},
        },
    }
    errors = dict(_ERRORS)
    if ep.mutating:
        errors.update(_MUTATING_ERRORS)
    responses.update({code: _error(code, text, ep.mutating) for code, text in sorted(errors.items())})
    op: dict[str, Any] = {
        "operationId": ep.method.lower() + _PARAM.sub(r"by_\1", ep.path).replace("/", "_").replace("-", "_"),
        "summary": ep.summary or f"{ep.method} {ep.path}",
        "description": f"Scope: {ep.scope or 'any valid credential'}. Also reachable as "
        f"POST / with x-service-route: {ep.path}"
        + (' and body {"method": "GET"}.' if not ep.mutating else ".")
        + NOTES.get((ep.method, ep.path), ""),
        "tags": [_tag(ep.path)],
        "parameters": params,
        "responses": responses,
        "security": [{"bearer": []}],
    }
    if ep.request is not None:
        schema = _ref(ep.request)
        rules = REQUEST_RULES.get((ep.method, ep.path))
        if rules is not None:
            schema = {"allOf": [schema, rules]}
        media: dict[str, Any] = {"schema": schema}
        if (ep.method, ep.path) in EXAMPLES:
            media["example"] = EXAMPLES[(ep.method, ep.path)]
        op["requestBody"] = {
            "required": id(ep.request) in _UNION_NAMES or bool(msgspec.structs.fields(ep.request)),
            "content": {"application/json": media},
        }
    return op


def _ref_name(name: str) -> dict[str, Any]:
    return {"$ref": _REF.format(name=name)}


# What the gateway checks of a routed body before it reads the route (transport.routed): an
# object, ``method`` one of transport.ROUTED_METHODS in any case, and every number bounded as
# everywhere (at most 18 significant digits, exponent within +-18). JSON Schema cannot count
# digits: integers are bounded to 18 digits, other numbers to multiples of 1e-6 within +-1e12
# (every amount and percentage the API takes), which is within the rule.
_BOUNDED_JSON = "BoundedJson"
ROUTED_SCHEMAS: dict[str, dict[str, Any]] = {
    "RoutedBody": {
        "type": "object",
        "description": 'the endpoint\'s payload, or {"method": "GET"} for a read; PATCH and DELETE '
        "name their method beside the payload",
        "properties": {"method": {"type": "string", "pattern": ci_pattern(ROUTED_METHODS)}},
        "additionalProperties": _ref_name(_BOUNDED_JSON),
    },
    _BOUNDED_JSON: {
        "description": (
            "any JSON value whose numbers have at most 18 significant digits and an exponent within +-18"
        ),
        "anyOf": [
            {"type": "string"},
            {"type": "boolean"},
            {"type": "null"},
            {"type": "integer", "minimum": -(10**18 - 1), "maximum": 10**18 - 1},
            {"type": "number", "minimum": -(10**12), "maximum": 10**12, "multipleOf": 1e-6},
            {"type": "array", "items": _ref_name(_BOUNDED_JSON)},
            {"type": "object", "additionalProperties": _ref_name(_BOUNDED_JSON)},
        ],
    },
}


def _routed(endpoints: list[Endpoint]) -> dict[str, Any]:
    routes = sorted({ep.path for ep in endpoints})
    errors = {**_ERRORS, **_MUTATING_ERRORS}
    return {
        "post": {
            "operationId": "routed",
            "summary": "Routed form: any endpoint through POST / with x-service-route",
            "tags": ["routed"],
            "description": 'The body is the endpoint\'s payload; for reads it is {"method": "GET"}. '
            "Same headers, same responses as the direct form.",
            "parameters": [
                _header(
                    "x-service-route",
                    True,
                    {"type": "string", "minLength": 1},
                    "the endpoint path, e.g. /v1/customers; one of: "
                    + ", ".join(routes)
                    + ". Missing: 400; unknown: 404 (after the credential is checked).",
                ),
                _MODE,
                _header("Idempotency-Key", False, _IDEM["schema"], "required when the route mutates"),
            ],
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": _ref_name("RoutedBody")}},
            },
            "responses": {
                "200": success_json("a read's success envelope", _headers_for("200", True)),
                "201": success_json("a create's success envelope", _headers_for("201", True)),
                **{code: _error(code, text, True) for code, text in sorted(errors.items())},
            },
            "security": [{"bearer": []}],
        }
    }


def build_document(endpoints: list[Endpoint], version: str = "1.0.1") -> dict[str, Any]:
    types: dict[str, Any] = {"ErrorEnvelope": ErrorEnvelope}
    for ep in endpoints:
        types.update((_name(t), t) for t in (ep.request, ep.response) if t is not None)
    names = sorted(types)
    schemas, components = msgspec.json.schema_components([types[n] for n in names], ref_template=_REF)
    for name, schema in zip(names, schemas, strict=True):
        if name in UNIONS:  # a union has no component of its own: it gets one, by its name
            components[name] = schema
    for name, extra in _CONDITIONS.items():
        if name in components:
            components[name].update(extra)
    components.update(ROUTED_SCHEMAS)
    paths: dict[str, Any] = {"/": _routed(endpoints)}
    for ep in endpoints:
        paths.setdefault(ep.path, {})[ep.method.lower()] = _operation(ep)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Sluice Partner Payments API",
            "version": version,
            "description": "Every response carries X-Request-Id; failures use the error "
            "envelope. See services/gateway/README.md for the decisions.",
        },
        "tags": TAGS,
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "API key (sk_test_/sk_live_) or JWT",
                }
            },
        },
    }

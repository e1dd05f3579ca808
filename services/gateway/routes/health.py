"""GET /v1/health: the health snapshot (mode, tenant, rate-limit state:
docs/guides/sandbox-and-live.md, "Limits") from real state."""

from __future__ import annotations

from common.times import iso_from_epoch
from gateway.pipeline import Call, Endpoint, Local
from gateway.schemas import HealthSnapshot


def build_health(call: Call) -> Local:
    t = call.principal.tenant
    wl = t.metadata.get("white_label") if isinstance(t.metadata, dict) else None
    return Local(
        200,
        {
            "request_id": call.request_id,
            "route": "GET /v1/health",
            "tenant_id": t.tenant_id,
            "tenant_name": t.tenant_name,
            "mode": call.principal.mode,
            "rate_limit_per_minute": call.window.limit,
            "remaining": call.window.remaining,
            "reset_at": iso_from_epoch(call.window.reset),
            "gateway": "ready",
            "white_label": wl if isinstance(wl, dict) and wl.get("enabled") else None,
        },
    )


ENDPOINTS = [
    Endpoint(
        "GET",
        "/v1/health",
        None,
        build_health,
        summary="Gateway readiness, mode, tenant and rate-limit state (any valid credential)",
        response=HealthSnapshot,
    )
]

"""Webhooks decisions: endpoint commands, operator commands and event fan-out.

Functions take the session and never commit; the message boundary (``handlers``) owns the
transaction. Every refusal is a :class:`ServiceError` that names its reason.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
from sqlalchemy.ext.asyncio import AsyncSession

from common.contracts import Command, Result
from common.contracts.base import as_mode
from common.contracts.commands import (
    CreateWebhook,
    DeleteWebhook,
    EnableWebhook,
    GetEvent,
    GetWebhook,
    GetWebhookStatus,
    ListDeliveries,
    ListEvents,
    ListWebhooks,
    ReplayDeliveries,
    ReplayDelivery,
    RotateWebhookSecret,
    UpdateWebhook,
)
from common.contracts.events import DELIVERED_EVENT_TYPES, AnyEvent, WebhookEndpointDisabled
from common.errors import ErrorCode, ServiceError, invalid, not_found
from common.ids import new_id
from common.keyring import seal_for_reply
from common.paging import page
from common.results import error_result as error_result  # handlers answer refusals with it
from common.results import ok_result
from common.times import iso
from common.views import columns
from webhooks import repository as repo
from webhooks.models import WebhookEndpoint
from webhooks.ordering import event_page, walk_of
from webhooks.repository import Disabled
from webhooks.signing import SecretBox, new_secret
from webhooks.targets import TargetError, vet
from webhooks.vetting import FULL, MAX_ENDPOINTS, Verdicts

API_VERSION = "1.0.1"
ROTATION_GRACE_S = 24 * 3600.0
DELIVERY_STATUSES = ("pending", "succeeded", "dead")
READ_ONLY = (GetWebhook, ListWebhooks, ListDeliveries, GetWebhookStatus, ListEvents, GetEvent)
MAX_RETIRED = 10  # secrets rotated out within the grace period that still sign
DISABLED_BY_PARTNER = "disabled_by_partner"  # disabled_reason of a PATCH status disabled

_json = msgspec.json.Encoder()

# What webhooks delivers: the domain events, and its own notice of a disabled endpoint.
Delivered = AnyEvent | WebhookEndpointDisabled


@dataclass(frozen=True, slots=True)
class Env:
    """What command handling needs from settings, read once at startup."""

    box: SecretBox
    allow_private: bool
    max_attempts: int
    events_kept_s: float = 30 * 86400.0  # GET /v1/events shows what is this recent


@dataclass(frozen=True, slots=True)
class WithSecret:
    """A handler's answer whose signing secret travels sealed beside ``data`` (``Result.sealed``)."""

    data: dict[str, Any]
    sealed: dict[str, bytes]


def endpoint_status(row: Any) -> str:
    if row.deleted_at is not None:
        return "deleted"
    return "enabled" if row.enabled else "disabled"


def endpoint_view(row: Any) -> dict[str, Any]:
    return {
        "webhook_id": row.id,
        "endpoint_url": row.url,
        "created_at": iso(row.created_at),
        "status": endpoint_status(row),
        "disabled_reason": row.disabled_reason,
        "enabled_events": list(row.enabled_events) if row.enabled_events else list(DELIVERED_EVENT_TYPES),
    }


def delivery_view(row: Any) -> dict[str, Any]:
    shown = columns(
        row, delivery_id="id", webhook_id="webhook_id", event_id="event_id", event_type="event_type"
    )
    return shown | {
        **columns(row, "status", "attempts", "last_status_code", "tenant_id", "mode", "last_error"),
        "next_attempt_at": iso(row.next_attempt_at) if row.status == "pending" else None,
        "created_at": iso(row.created_at),
    }


def _limit(value: int, top: int = 100) -> int:
    if not 1 <= value <= top:
        raise invalid("limit", f"limit must be between 1 and {top}")
    return value


# ---- partner commands (scoped to ctx tenant and mode) ----


NOT_VETTED = TargetError("not_vetted", "")  # a caller that did not vet before its transaction


async def create_webhook(
    session: AsyncSession, env: Env, cmd: CreateWebhook, verdict: TargetError | None = NOT_VETTED
) -> tuple[int, Any]:
    """The limit first (counted under the lock), then the URL's ``verdict`` from
    ``webhooks.vetting``, resolved before the transaction opened (a caller that gives none
    vets here, inside its transaction: only direct callers, never the consumer)."""
    existing = None
    if await repo.count_endpoints_locked(session, cmd.ctx.tenant_id, cmd.ctx.mode) >= MAX_ENDPOINTS:
        existing = await repo.get_endpoint(session, cmd.webhook_id, cmd.ctx.tenant_id, cmd.ctx.mode)
        if existing is None:  # a retry of a creation that happened answers below, as before
            raise invalid(
                "endpoint_url",
                f"a tenant has at most {MAX_ENDPOINTS} webhook endpoints per mode",
                reason="too_many_endpoints",
                limit=MAX_ENDPOINTS,
            )
    if verdict is NOT_VETTED:
        verdict = await _vet_here(cmd.endpoint_url, env)
    if verdict is FULL and existing is not None:  # not resolved for want of room: a retry,
        verdict = None  # answered duplicate_id below, as before
    if verdict is not None:
        raise invalid("endpoint_url", verdict.message, reason=verdict.reason)
    secret = new_secret()
    row = await repo.insert_endpoint(
        session,
        WebhookEndpoint(
            **cmd.ctx.owner,
            id=cmd.webhook_id,
            url=cmd.endpoint_url,
            secret_enc=env.box.seal_secret(secret, cmd.webhook_id),
            enabled_events=_event_types(cmd.enabled_events),
        ),
    )
    if row is None:
        raise invalid("webhook_id", "a webhook with this id already exists", reason="duplicate_id")
    return 201, WithSecret(endpoint_view(row), _for_reply(env, secret, cmd))


async def _vet_here(url: str, env: Env) -> TargetError | None:
    """The URL's verdict, resolved inside the caller's transaction (direct callers only)."""
    try:
        await vet(url, env.allow_private)
    except TargetError as exc:
        return exc
    return None


def _event_types(given: list[str] | None) -> list[str] | None:
    """Checked again here (the gateway checks first); every type is stored as NULL."""
    if given is None:
        return None
    unknown = sorted(set(given) - set(DELIVERED_EVENT_TYPES))
    if not given or unknown:
        raise invalid(
            "enabled_events",
            f"unknown event types {unknown}" if unknown else "list at least one event type",
            reason="unknown_event_type" if unknown else "empty",
        )
    types = sorted(set(given))
    return None if types == sorted(DELIVERED_EVENT_TYPES) else types


def _for_reply(env: Env, secret: str, cmd: Command) -> dict[str, bytes]:
    """The new secret, sealed for the reply (the gateway opens it into ``signing_secret``)."""
    return {"signing_secret": seal_for_reply(env.box.ring, secret, cmd.command_id)}


async def _owned(session: AsyncSession, cmd: Command, webhook_id: str, lock: bool = False) -> Any:
    row = await repo.get_endpoint(session, webhook_id, cmd.ctx.tenant_id, cmd.ctx.mode, lock=lock)
    if row is None:
        raise not_found("webhook")
    return row


async def get_webhook(session: AsyncSession, env: Env, cmd: GetWebhook) -> tuple[int, Any]:
    return 200, endpoint_view(await _owned(session, cmd, cmd.webhook_id))


async def list_webhooks(session: AsyncSession, env: Env, cmd: ListWebhooks) -> tuple[int, Any]:
    limit = _limit(cmd.limit)
    rows = await repo.list_endpoints(session, cmd.ctx.tenant_id, cmd.ctx.mode, limit + 1, cmd.starting_after)
    return 200, page(list(rows), limit, endpoint_view)


async def rotate_secret(session: AsyncSession, env: Env, cmd: RotateWebhookSecret) -> tuple[int, Any]:
    """New secret now; the current one stays valid (both signatures sent) for 24 hours."""
    row = await _owned(session, cmd, cmd.webhook_id, lock=True)
    now = datetime.now(UTC)
    live = [
        (sealed, until)
        for sealed, until in zip(row.retired_secrets_enc or (), row.retired_until or (), strict=True)
        if until > now
    ]
    if len(live) >= MAX_RETIRED:
        raise invalid(
            "webhook_id",
            f"{len(live)} secrets rotated out in the last 24 hours still sign; try again when the oldest "
            f"expires ({iso(min(u for _, u in live))})",
            reason="too_many_rotations",
        )
    until = now + timedelta(seconds=ROTATION_GRACE_S)
    secret = new_secret()
    row = await repo.rotate_secret(
        session,
        row.id,
        env.box.seal_secret(secret, row.id),
        [bytes(row.secret_enc), *(bytes(s) for s, _ in live)],
        [until, *(u for _, u in live)],
    )
    assert row is not None  # locked above
    return 200, WithSecret(
        {**endpoint_view(row), "previous_secret_expires_at": iso(until)}, _for_reply(env, secret, cmd)
    )


@dataclass(frozen=True, slots=True)
class Changes:
    """What a PATCH changes of an endpoint, decided from the command and the row."""

    url: str | None  # None: kept
    event_types: list[str] | repo.Keep | None  # KEEP: kept; None: every type
    enable: bool | None  # None: the status is kept


def changes_of(row: Any, cmd: UpdateWebhook) -> Changes:
    """Only what differs: the same URL is not vetted again, and enabling an enabled endpoint
    (or disabling a disabled one) changes nothing, its disabled reason included."""
    if cmd.endpoint_url is None and cmd.enabled_events is None and cmd.status is None:
        raise invalid("body", "name at least one of endpoint_url, enabled_events, status", reason="empty")
    url = cmd.endpoint_url if cmd.endpoint_url not in (None, row.url) else None
    types = _event_types(cmd.enabled_events) if cmd.enabled_events is not None else repo.KEEP
    enable = None
    if cmd.status is not None and (cmd.status == "enabled") != bool(row.enabled):
        enable = cmd.status == "enabled"
    return Changes(url, types, enable)


async def update_webhook(
    session: AsyncSession, env: Env, cmd: UpdateWebhook, verdict: TargetError | None = NOT_VETTED
) -> tuple[int, Any]:
    """A new URL is vetted as at creation (``verdict`` from ``webhooks.vetting``); disabling
    ends the pending deliveries, as the automatic disabling does; enabling makes the endpoint
    healthy again, as an operator's ``enable_webhook`` does."""
    row = await _owned(session, cmd, cmd.webhook_id, lock=True)
    changes = changes_of(row, cmd)
    if changes.url is not None:
        if verdict is NOT_VETTED:
            verdict = await _vet_here(changes.url, env)
        if verdict is not None:
            raise invalid("endpoint_url", verdict.message, reason=verdict.reason)
    row = await repo.change_endpoint(session, row.id, changes.url, changes.event_types)
    if changes.enable is True:
        row = await repo.enable_endpoint(session, cmd.webhook_id)
    elif changes.enable is False:
        row = await repo.disable_endpoint(session, cmd.webhook_id, DISABLED_BY_PARTNER)
    assert row is not None  # locked above
    return 200, endpoint_view(row)


async def delete_webhook(session: AsyncSession, env: Env, cmd: DeleteWebhook) -> tuple[int, Any]:
    """Answered once with ``status: deleted``; afterwards the endpoint is not found."""
    row = await _owned(session, cmd, cmd.webhook_id, lock=True)
    row = await repo.delete_endpoint(session, row.id)
    assert row is not None  # locked above
    return 200, endpoint_view(row)


# ---- operator commands (from admin; not scoped to the ctx tenant) ----


def _operator_scope(cmd: Command, tenant_id: str) -> None:
    """An operator may name the tenant (ctx.tenant_id); an id of another tenant is not found."""
    if cmd.ctx.tenant_id and cmd.ctx.tenant_id != tenant_id:
        raise not_found("webhook" if isinstance(cmd, EnableWebhook | ReplayDeliveries) else "delivery")


async def enable_webhook(session: AsyncSession, env: Env, cmd: EnableWebhook) -> tuple[int, Any]:
    current = await repo.get_endpoint(session, cmd.webhook_id, lock=True)
    if current is None:
        raise not_found("webhook")
    _operator_scope(cmd, current.tenant_id)
    row = await repo.enable_endpoint(session, cmd.webhook_id)
    return 200, endpoint_view(row)


async def replay_delivery(session: AsyncSession, env: Env, cmd: ReplayDelivery) -> tuple[int, Any]:
    current = await repo.get_delivery(session, cmd.delivery_id, lock=True)
    if current is None:
        raise not_found("delivery")
    _operator_scope(cmd, current.tenant_id)
    if current.status != "dead":
        raise invalid(
            "delivery_id",
            f"only dead deliveries can be replayed; this one is {current.status}",
            reason="not_dead",
        )
    endpoint = await repo.get_endpoint(session, current.webhook_id)
    if endpoint is None:
        raise invalid("delivery_id", "the delivery's endpoint was deleted", reason="endpoint_deleted")
    if not endpoint.enabled:
        raise invalid(
            "delivery_id", "the delivery's endpoint is disabled; enable it first", reason="endpoint_disabled"
        )
    row = await repo.replay_delivery(session, cmd.delivery_id)
    return 200, delivery_view(row)


_RFC3339 = re.compile(r"(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}):(\d{2})(\.\d+)?(Z|[+-]\d{2}:\d{2})?", re.IGNORECASE)


def _since(value: str | None) -> datetime | None:
    """An RFC 3339 time as the document says (``format: date-time``): ``t`` and ``z`` in either
    case, any number of fractional digits (microseconds kept), a leap second read as :59."""
    if value is None:
        return None
    m = _RFC3339.fullmatch(value)
    if m is None:
        raise invalid("since", "since must be an RFC 3339 time", reason="invalid_time")
    if m.group(5) is None:
        raise invalid("since", "since must carry a UTC offset", reason="invalid_time")
    day, hm, sec, frac, offset = m.groups()
    sec = "59" if sec == "60" else sec
    offset = "+00:00" if offset.upper() == "Z" else offset
    try:
        return datetime.fromisoformat(f"{day}T{hm}:{sec}{(frac or '')[:7]}{offset}")
    except ValueError:
        raise invalid("since", "since must be an RFC 3339 time", reason="invalid_time") from None


async def replay_deliveries(session: AsyncSession, env: Env, cmd: ReplayDeliveries) -> tuple[int, Any]:
    """Bulk replay: every dead delivery of the endpoint (created since ``since``) gets one more
    attempt, due now. Repeating it replays only what has died since (nothing else is dead)."""
    since = _since(cmd.since)
    endpoint = await repo.get_endpoint(session, cmd.webhook_id, lock=True)
    if endpoint is None:
        raise not_found("webhook")
    _operator_scope(cmd, endpoint.tenant_id)
    if not endpoint.enabled:
        raise invalid("webhook_id", "the endpoint is disabled; enable it first", reason="endpoint_disabled")
    replayed = await repo.replay_dead(session, cmd.webhook_id, since)
    return 200, {"webhook_id": cmd.webhook_id, "replayed": replayed}


async def list_deliveries(session: AsyncSession, env: Env, cmd: ListDeliveries) -> tuple[int, Any]:
    limit = _limit(cmd.limit)
    if cmd.status is not None and cmd.status not in DELIVERY_STATUSES:
        raise invalid("status", "status must be one of pending, succeeded, dead", reason="unknown_status")
    rows = await repo.list_deliveries(
        session,
        tenant_id=cmd.target_tenant_id,
        webhook_id=cmd.webhook_id,
        status=cmd.status,
        limit=limit + 1,
        starting_after=cmd.starting_after,
    )
    return 200, page(list(rows), limit, delivery_view)


def _event_view(row: Any) -> dict[str, Any]:
    """The stored envelope, exactly as it was delivered (an event stored before numbering
    shows its number from the column)."""
    view: dict[str, Any] = msgspec.json.decode(bytes(row.body))
    if "sequence" not in view and row.sequence is not None:
        view["sequence"] = row.sequence
    return view


async def list_events(session: AsyncSession, env: Env, cmd: ListEvents) -> tuple[int, Any]:
    limit = _limit(cmd.limit)
    if cmd.event_type is not None and cmd.event_type not in DELIVERED_EVENT_TYPES:
        raise invalid("type", f"unknown event type {cmd.event_type[:60]!r}", reason="unknown_event_type")
    walk = walk_of(cmd.order, cmd.starting_after, cmd.ending_before)
    beyond = None
    if walk.cursor is not None:
        beyond = await repo.event_sequence(session, walk.cursor, cmd.ctx.tenant_id, cmd.ctx.mode)
        if beyond is None:  # the request is well formed; the event it names is not there
            raise ServiceError(
                ErrorCode.NOT_FOUND,
                f"{walk.field} must be the id of one of your events",
                details={"field": walk.field, "reason": "unknown_cursor"},
            )
    rows = await repo.list_events(
        session,
        cmd.ctx.tenant_id,
        cmd.ctx.mode,
        cmd.event_type,
        limit + 1,
        descending=walk.descending,
        beyond=beyond,
        kept_s=env.events_kept_s,
    )
    return 200, event_page(rows, limit, walk, _event_view)


async def get_event(session: AsyncSession, env: Env, cmd: GetEvent) -> tuple[int, Any]:
    row = await repo.get_event(session, cmd.event_id, cmd.ctx.tenant_id, cmd.ctx.mode, env.events_kept_s)
    if row is None:
        raise not_found("event")
    return 200, _event_view(row)


async def webhook_status(session: AsyncSession, env: Env, cmd: GetWebhookStatus) -> tuple[int, Any]:
    return 200, {"verified_endpoint": await repo.tenant_verified(session, cmd.ctx.tenant_id)}


HANDLERS: dict[type, Any] = {
    CreateWebhook: create_webhook,
    GetWebhook: get_webhook,
    ListWebhooks: list_webhooks,
    RotateWebhookSecret: rotate_secret,
    UpdateWebhook: update_webhook,
    DeleteWebhook: delete_webhook,
    EnableWebhook: enable_webhook,
    ReplayDelivery: replay_delivery,
    ReplayDeliveries: replay_deliveries,
    ListDeliveries: list_deliveries,
    GetWebhookStatus: webhook_status,
    ListEvents: list_events,
    GetEvent: get_event,
}


async def execute(session: AsyncSession, env: Env, cmd: Command, vetted: Verdicts | None = None) -> Result:
    """Run one command; a refusal becomes an error result (the caller rolls back its savepoint).
    ``vetted``: the verdicts on the batch's endpoint URLs, resolved before its transaction."""
    handler = HANDLERS.get(type(cmd))
    if handler is None:
        raise ServiceError(ErrorCode.INVALID_REQUEST, f"unsupported command {type(cmd).__name__}")
    if isinstance(cmd, CreateWebhook) and vetted is not None and cmd.command_id in vetted:
        status, data = await create_webhook(session, env, cmd, vetted[cmd.command_id])
    elif isinstance(cmd, UpdateWebhook) and vetted is not None and cmd.command_id in vetted:
        status, data = await update_webhook(session, env, cmd, vetted[cmd.command_id])
    else:
        status, data = await handler(session, env, cmd)
    if isinstance(data, WithSecret):
        return ok_result(cmd, data.data, status, sealed=data.sealed)
    return ok_result(cmd, data, status)


# ---- events ----


def envelope(event: Delivered, sequence: int) -> bytes:
    """The exact bytes delivered: the event envelope (docs/guides/webhooks.md, "Events"), with
    its number among the tenant's events of its mode and only the partner-safe ``data``."""
    return _json.encode(
        {
            "id": event.event_id,
            "type": type(event).__struct_config__.tag,
            "created_at": event.created_at,
            "api_version": API_VERSION,
            "mode": event.mode,
            "sequence": sequence,
            "data": event.data,
        }
    )


async def fan_out(session: AsyncSession, events: Sequence[Delivered], max_attempts: int) -> list[str]:
    """Store the events not stored yet, numbered in the order given (the events topic's order
    for one tenant), each with one delivery per matching endpoint; the new delivery ids."""
    numbers = await repo.number_events(session, [(e.event_id, e.tenant_id, e.mode) for e in events])
    rows = []
    for e in events:
        sequence = numbers.pop(e.event_id, None)  # the first copy only; None: stored already
        if sequence is None:
            continue
        rows.append(
            {
                "event_id": e.event_id,
                "tenant_id": e.tenant_id,
                "mode": e.mode,
                "type": type(e).__struct_config__.tag,
                "body": envelope(e, sequence),
                "sequence": sequence,
            }
        )
    return await repo.fan_out(session, rows, max_attempts)


async def announce_disabled(session: AsyncSession, disabled: list[Disabled], max_attempts: int) -> list[str]:
    """Tell the tenant (through its endpoints still enabled in that mode) that an endpoint was
    disabled and why, as Svix does with ``endpoint.disabled``: a ``webhook_endpoint.disabled``
    event, stored and delivered like any other (so it is also retried and replayable)."""
    events: list[Delivered] = []
    for d in disabled:
        events.append(
            WebhookEndpointDisabled(
                event_id=new_id("evt"),
                tenant_id=d.tenant_id,
                mode=as_mode(d.mode),
                created_at=iso(d.disabled_at) or "",
                data={
                    "webhook_id": d.id,
                    "endpoint_url": d.url,
                    "reason": "failing_without_success",
                    "failing_since": iso(d.failing_since),
                    "disabled_at": iso(d.disabled_at),
                },
            )
        )
    return await fan_out(session, events, max_attempts)

"""The public signup screen behind an onboarding link (docs/guides/money.md, "Onboarding a
customer through a signup link").

Viewing never consumes the link. Submitting claims it for one attempt (the exact command is
stored), sends ``CreateCustomer`` through compliance like ``POST /v1/customers``, and then
either consumes it (success) or releases it (refusal: the end user may correct and retry).
An attempt whose answer never came stays claimed; the next submit resends that same command
(same ``command_id``, so compliance and the ledger answer it without a second customer).

There is no cookie and no session: the signed token in the path is the only authority, so a
cross-site form post cannot borrow anything the attacker does not already hold (CSRF-safe).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import msgspec
from litestar import Response
from litestar.datastructures import State

from common.contracts import Ctx, Result, decode, encode
from common.contracts.commands import CreateCustomer, partition_key
from common.errors import ServiceError, invalid
from common.ids import new_id
from common.validation import convert
from gateway import repository as identity
from gateway.onboarding import repository as repo
from gateway.onboarding.links import verify
from gateway.onboarding.pages import Page, branding, gone, origin_of, render
from gateway.schemas import CustomerCreate, customer_fields
from gateway.wording import PHRASES

FIELDS = (
    "account_type",
    "full_name",
    "company_name",
    "registration_number",
    "email",
    "country_code",
    "phone_e164",
)
EXPIRED = "This signup link has expired or is not valid. Please ask for a new link."
USED = "This signup link was already used to create an account."
DISABLED = "Signups through this link are suspended. Please contact the company that sent it."


async def _load(state: State, token: str) -> tuple[Any, Any] | Response[str]:
    authorization_id = verify(state.settings, token)
    if authorization_id is None:
        return gone(EXPIRED)
    async with state.pipeline.sessions() as session:
        row = await repo.get_authorization(session, authorization_id)
        if row is None or row.expires_at <= datetime.now(UTC):
            return gone(EXPIRED)
        if row.used_at is not None:
            return gone(USED)
        tenant = await identity.tenant_by_id(session, row.tenant_id)
        if tenant is not None and tenant.disabled_at is not None:  # disable_tenant stops links too
            return gone(DISABLED)
        return row, tenant


def _page(row: Any, tenant: Any, token: str, **kw: Any) -> Page:
    brand = branding(tenant)
    targets = [o for o in [origin_of(row.redirect_url)] if o]
    title = (brand.app_name if brand and brand.app_name else None) or "Account signup"
    return Page(
        title=title,
        brand=brand,
        action=f"/onboarding/{token}",
        account_type=row.account_type,
        form_targets=targets,
        **kw,
    )


async def show(state: State, token: str) -> Response[str]:
    loaded = await _load(state, token)
    if isinstance(loaded, Response):
        return loaded
    row, tenant = loaded
    return render("form.mako", _page(row, tenant, token, values={"email": row.email or ""}), 200)


def _command(state: State, row: Any, tenant: Any, values: dict[str, str], request_id: str) -> CreateCustomer:
    """The same command ``POST /v1/customers`` sends; invalid input raises naming the field."""
    body: dict[str, Any] = {k: v for k, v in values.items() if v and k in FIELDS}
    body["account_type"] = row.account_type or body.get("account_type") or "individual"
    body["country_code"] = body.get("country_code", "").upper()
    body["service_user_id"] = row.service_user_id
    # Asked in the form's words before the union's cases would refuse the same (gateway.schemas).
    if body["account_type"] == "individual" and not body.get("full_name"):
        raise invalid("full_name", "Please enter your full name.")
    if body["account_type"] == "business" and not body.get("company_name"):
        raise invalid("company_name", "Please enter the company name.")
    p: CustomerCreate = convert(body, CustomerCreate, phrases=PHRASES)  # type: ignore[arg-type]  # a union is not a type[T] (PEP 747)
    ctx = Ctx(
        request_id=request_id,
        tenant_id=row.tenant_id,
        mode=row.mode,
        live_enabled=bool(tenant and tenant.live_enabled),
        reply_to=state.pipeline.rpc.reply_topic,
    )
    return CreateCustomer(
        command_id=new_id("cmd"),
        ctx=ctx,
        customer_id=new_id("cus"),
        onboarding_authorization_id=row.id,
        **customer_fields(p),
    )


async def _send(state: State, row: Any, cmd: CreateCustomer, payload: bytes) -> Result | None:
    """Send one claimed attempt; consume the link on success, release it on refusal."""
    rpc = state.pipeline.rpc
    try:
        result = await rpc.call(rpc.topics.compliance_commands, cmd, key=partition_key(cmd))
    except TimeoutError:
        return None  # stays claimed: the next submit resends this very command
    async with state.pipeline.sessions() as session, session.begin():
        if result.ok:
            data = result.data if isinstance(result.data, dict) else {}
            await repo.consume(session, row.id, str(data.get("customer_id") or cmd.customer_id))
        else:
            await repo.clear_pending(session, row.id, payload)
    return result


def _done(row: Any, tenant: Any, token: str, result: Result) -> Response[str]:
    data = result.data if isinstance(result.data, dict) else {}
    customer_id = str(data.get("customer_id", ""))
    if row.redirect_url:
        parts = urlsplit(row.redirect_url)
        query = [*parse_qsl(parts.query), ("customer_id", customer_id), ("authorization_id", row.id)]
        target = urlunsplit(parts._replace(query=urlencode(query)))
        return Response(
            "",
            status_code=303,
            headers={"Location": target, "Cache-Control": "no-store", "Referrer-Policy": "no-referrer"},
        )
    page = _page(
        row,
        tenant,
        token,
        heading="Your account has been created",
        message="Thank you. You can close this page now.",
        reference=customer_id,
    )
    return render("message.mako", page, 201)


def _waiting(row: Any, tenant: Any, token: str) -> Response[str]:
    page = _page(
        row,
        tenant,
        token,
        heading="Still working on it",
        message="Your signup is being processed. Please submit again in a moment.",
        tone="error",
    )
    return render("message.mako", page, 503)


async def submit(state: State, token: str, values: dict[str, str], request_id: str) -> Response[str]:
    loaded = await _load(state, token)
    if isinstance(loaded, Response):
        return loaded
    row, tenant = loaded
    values = {k: (values.get(k) or "").strip()[:256] for k in FIELDS}
    if row.pending_command is not None:
        # An earlier attempt never got its answer: resend that very command (once it is stale;
        # until then another submit is in flight right now).
        payload = bytes(row.pending_command)
        async with state.pipeline.sessions() as session, session.begin():
            taken = await repo.retake_pending(session, row.id, payload, state.settings.gateway_timeout_s)
        if not taken:
            again = await _load(state, token)
            return again if isinstance(again, Response) else _waiting(row, tenant, token)
        earlier = decode(payload, CreateCustomer)
        earlier = msgspec.structs.replace(
            earlier, ctx=msgspec.structs.replace(earlier.ctx, reply_to=state.pipeline.rpc.reply_topic)
        )
        result = await _send(state, row, earlier, payload)
        if result is None:
            return _waiting(row, tenant, token)
        if result.ok:
            return _done(row, tenant, token, result)
    try:
        cmd = _command(state, row, tenant, values, request_id)
    except ServiceError as err:
        field = err.details.get("field", "")
        message = (
            err.message
            if field in ("full_name", "company_name")
            else (f"Please check the field {field.replace('_', ' ')}." if field else err.message)
        )
        return render("form.mako", _page(row, tenant, token, values=values, error=message), 400)
    payload = encode(cmd)
    async with state.pipeline.sessions() as session, session.begin():
        claimed = await repo.mark_pending(session, row.id, payload)
    if not claimed:
        again = await _load(state, token)
        return again if isinstance(again, Response) else _waiting(row, tenant, token)
    result = await _send(state, row, cmd, payload)
    if result is None:
        return _waiting(row, tenant, token)
    if result.ok:
        return _done(row, tenant, token, result)
    reason = (result.error.details.get("reason") if result.error else None) or "refused"
    message = f"We cannot open this account: {result.error.message if result.error else reason}."
    page = _page(row, tenant, token, values=values, error=message)
    return render("form.mako", page, result.status if 400 <= result.status < 600 else 403)

"""Transfers and payouts: resolve the parties, hold the funds, then follow the state machine.

Routes: ``book`` (provider_wallet to provider_wallet, settles atomically -> completed),
``onchain`` (a stablecoin transfer on one chain -> pending, advanced asynchronously) and
``payout`` (a provider_wallet to an external bank account -> pending). A command stamped by
compliance with ``decision.outcome == "review"`` waits in ``in_review`` with its funds held.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import msgspec
from sqlalchemy.ext.asyncio import AsyncSession

from common.contracts.commands import CreateTransfer, ReviewTransfer
from common.contracts.events import PayoutCreated, TransferCreated
from common.errors import ErrorCode, ServiceError, forbidden, invalid
from common.ids import new_id
from ledger import journal, views
from ledger import repository as repo
from ledger.effects import Effects, LedgerConfig, missing, now_iso, parse_amount
from ledger.numbers import PEGS
from ledger.states import next_step_s, transition

Row = Any

TRANSFER_CURRENCIES = frozenset({"USDC", "USDT"})
PAYOUT_RAILS = {"ach": "USD", "wire": "USD", "sepa": "EUR", "faster_payments": "GBP"}
STABLECOIN_PLACES = 6


async def _wallet(session: AsyncSession, cmd: CreateTransfer, wallet_id: str, field: str) -> Row:
    w = await repo.get_wallet(session, cmd.ctx.tenant_id, cmd.ctx.mode, wallet_id)
    if w is None:
        raise missing("wallet", field)
    return w


async def _source(session: AsyncSession, cmd: CreateTransfer) -> Row:
    s, rail = cmd.source, cmd.source.payment_rail.lower()
    if rail == "provider_wallet":
        if not s.provider_wallet_id:
            raise invalid("source.provider_wallet_id", "a provider_wallet source needs provider_wallet_id")
        w = await _wallet(session, cmd, s.provider_wallet_id, "source.provider_wallet_id")
    elif rail == "stablecoin" and cmd.kind == "transfer":
        if not s.customer_id:
            raise invalid("source.customer_id", "an on-chain source needs customer_id")
        if not s.chain:
            raise invalid("source.chain", "an on-chain source needs chain")
        ws = await repo.customer_wallets(
            session, cmd.ctx.tenant_id, cmd.ctx.mode, s.customer_id, s.currency.upper(), s.chain.upper()
        )
        if s.provider_wallet_id:
            ws = [w for w in ws if w.id == s.provider_wallet_id]
        elif s.from_address:
            ws = [w for w in ws if w.deposit_address == s.from_address]
        elif len(ws) > 1:
            raise invalid(
                "source.from_address",
                "the customer has several wallets on this chain in this"
                " currency: name one with from_address or provider_wallet_id",
            )
        if not ws:
            raise missing("source wallet", "source.customer_id")
        w = ws[0]
    else:
        allowed = "provider_wallet or stablecoin" if cmd.kind == "transfer" else "provider_wallet"
        raise invalid("source.payment_rail", f"source payment_rail must be {allowed}")
    if w.symbol != cmd.currency:
        raise invalid("source.currency", f"source currency must be the wallet's symbol {w.symbol}")
    return w


async def _transfer_destination(session: AsyncSession, cmd: CreateTransfer, src: Row) -> tuple[Row, str]:
    d, rail = cmd.destination, cmd.destination.payment_rail.lower()
    if rail == "provider_wallet" and d.provider_wallet_id:
        w = await _wallet(session, cmd, d.provider_wallet_id, "destination.provider_wallet_id")
    elif rail in ("provider_wallet", "stablecoin") and d.address:
        w = await repo.wallet_by_address(session, cmd.ctx.tenant_id, cmd.ctx.mode, d.address)
        if w is None:  # transfers move money between wallets the tenant owns
            raise missing("destination wallet", "destination.address")
    elif rail in ("provider_wallet", "stablecoin"):
        raise invalid("destination.address", "the destination needs provider_wallet_id or address")
    else:
        raise invalid(
            "destination.payment_rail", "destination payment_rail must be provider_wallet or stablecoin"
        )
    if w.symbol != cmd.currency or d.currency.upper() != cmd.currency:
        raise invalid("destination.currency", "source and destination currency must match")
    if w.id == src.id:
        raise invalid("destination", "source and destination must be different wallets")
    book = rail == "provider_wallet" and cmd.source.payment_rail.lower() == "provider_wallet"
    if not book and (w.chain != src.chain or (d.chain and d.chain.upper() != w.chain)):
        raise invalid("destination.chain", "an on-chain transfer stays on the source wallet's chain")
    return w, "book" if book else "onchain"


def _payout_destination(cmd: CreateTransfer, src: Row) -> None:
    d, rail = cmd.destination, cmd.destination.payment_rail.lower()
    if rail not in PAYOUT_RAILS:
        raise invalid("destination.payment_rail", f"payout rail must be one of {', '.join(PAYOUT_RAILS)}")
    fiat = d.currency.upper()
    if fiat != PAYOUT_RAILS[rail]:
        raise invalid("destination.currency", f"{rail} pays {PAYOUT_RAILS[rail]}")
    if src.symbol not in PEGS.get(fiat, frozenset()):
        raise invalid("destination.currency", f"{src.symbol} cannot be paid out in {fiat}")
    if not d.external_account_id:
        raise invalid("destination.external_account_id", "a payout needs an approved external_account_id")


def _created_event(t: Row, request_id: str) -> Any:
    cls = PayoutCreated if t.kind == "payout" else TransferCreated
    return cls(
        event_id=new_id("evt"),
        tenant_id=t.tenant_id,
        mode=t.mode,
        created_at=now_iso(),
        request_id=request_id,
        data=views.transfer(t),
    )


def _answer(t: Row) -> Effects:
    return Effects(201, {"transfer_id": t.id, "state": t.state, "provider": "service"})


def _replay(existing: Row, cmd: CreateTransfer, amount: Any) -> Effects:
    """Second line of defence: the same idempotency key answers the original, never pays twice."""
    if existing.kind != cmd.kind or existing.amount != amount or existing.currency != cmd.currency:
        raise ServiceError(
            ErrorCode.IDEMPOTENCY_REPLAY_MISMATCH,
            "idempotency_key was already used for a different operation",
            details={"field": "idempotency_key", "transfer_id": existing.id},
        )
    return _answer(existing)


async def create_transfer(session: AsyncSession, cmd: CreateTransfer, cfg: LedgerConfig) -> Effects:
    t_id, m = cmd.ctx.tenant_id, cmd.ctx.mode
    if cmd.decision is None:  # fail closed: money moves only with a compliance decision
        raise forbidden("compliance_decision_missing", "the command carries no compliance decision")
    amount = parse_amount(cmd.amount, STABLECOIN_PLACES, "source.amount")
    existing = await repo.transfer_by_idempotency_key(session, t_id, m, cmd.idempotency_key)
    if existing is not None:
        return _replay(existing, cmd, amount)
    if cmd.source.currency.upper() != cmd.currency:
        raise invalid("source.currency", "currency must be the source currency")
    if cmd.kind == "transfer" and cmd.currency not in TRANSFER_CURRENCIES:
        raise invalid("source.currency", "transfers move USDC or USDT")
    src = await _source(session, cmd)
    dst_id, route = None, "payout"
    if cmd.kind == "transfer":
        dst, route = await _transfer_destination(session, cmd, src)
        dst_id = dst.id
    else:
        _payout_destination(cmd, src)
    values = {
        "id": cmd.transfer_id,
        "tenant_id": t_id,
        "mode": m,
        "kind": cmd.kind,
        "route": route,
        "amount": amount,
        "currency": cmd.currency,
        "source_wallet_id": src.id,
        "destination_wallet_id": dst_id,
        "source": msgspec.to_builtins(cmd.source),
        "destination": msgspec.to_builtins(cmd.destination),
        "developer_fee": msgspec.to_builtins(cmd.developer_fee) if cmd.developer_fee else None,
        "idempotency_key": cmd.idempotency_key,
        "decision_id": cmd.decision.decision_id,
    }
    values["next_step_s"] = next_step_s(SimpleNamespace(**values), "pending", cfg)
    t = await repo.insert_transfer(session, values)
    if t is None:  # a concurrent twin committed first
        existing = await repo.transfer_by_idempotency_key(session, t_id, m, cmd.idempotency_key)
        return _replay(existing, cmd, amount)
    await journal.post(
        session,
        tenant_id=t_id,
        mode=m,
        kind=f"{cmd.kind}_hold",
        transfer_id=t.id,
        postings=[
            (journal.available(src.id), cmd.currency, -amount),
            (journal.held(src.id), cmd.currency, amount),
        ],
    )
    events = [_created_event(t, cmd.ctx.request_id)]
    rid = cmd.ctx.request_id
    if cmd.decision.outcome == "review":
        t, ev = await transition(session, t, "in_review", cause="compliance_review", cfg=cfg, request_id=rid)
        events.append(ev)
    elif route == "book":
        for to in ("processing", "completed"):
            t, ev = await transition(session, t, to, cause="book_settlement", cfg=cfg, request_id=rid)
            events.append(ev)
    fx = _answer(t)
    fx.events.extend(events)
    return fx


async def review_transfer(session: AsyncSession, cmd: ReviewTransfer, cfg: LedgerConfig) -> Effects:
    """An operator's decision on an ``in_review`` transfer or payout."""
    if cmd.ctx.actor:  # operators act across tenants; a tenant id given narrows the lookup
        t = await repo.lock_transfer(session, cmd.transfer_id, cmd.ctx.tenant_id or None)
    else:
        t = await repo.lock_transfer(session, cmd.transfer_id, cmd.ctx.tenant_id, cmd.ctx.mode)
    if t is None:
        raise missing("transfer", "transfer_id")
    rid, events = cmd.ctx.request_id, []
    if cmd.decision == "reject":
        t, ev = await transition(session, t, "rejected", cause="operator_reject", cfg=cfg, request_id=rid)
        events.append(ev)
    else:
        t, ev = await transition(session, t, "processing", cause="operator_approve", cfg=cfg, request_id=rid)
        events.append(ev)
        if t.route == "book":
            t, ev = await transition(
                session, t, "completed", cause="book_settlement", cfg=cfg, request_id=rid
            )
            events.append(ev)
    fx = Effects(200, views.transfer(t))
    fx.events.extend(events)
    return fx

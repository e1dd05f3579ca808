"""Compliance decisions: read the inputs, apply the rules, persist the decision.

Every decision (allow, review, refuse) is persisted with its inputs, the rule that decided
and the request id. An approved command is forwarded to the ledger stamped with the
decision; a refusal is answered to the caller directly. Any error while deciding propagates
(fail closed): the batch rolls back, each command is retried alone and finally answered 503
and dead-lettered, never let through.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any, Literal

import msgspec
from sqlalchemy.ext.asyncio import AsyncSession

from common import replies
from common.contracts import Command, Decision, Result, encode
from common.contracts.commands import (
    CreateCustomer,
    CreateTransfer,
    CreateVirtualAccount,
    CreateWallet,
    SandboxDeposit,
    partition_key,
)
from common.errors import ErrorCode, Reason, ServiceError, reason_code
from common.ids import new_id
from common.logging import request_id_var
from common.metrics import STAMP_DISAGREED, TRANSFER_IDS_REUSED
from common.outbox import Outbox, OutMessage
from common.results import error_result
from common.topics import Topics
from compliance import allowance, policy_admin, rules
from compliance import repository as repo
from compliance.allowance import Claim
from compliance.rules import PartyFacts, TransferFacts, Verdict
from compliance.snapshot import Snapshot

Decided = tuple[Verdict, dict[str, Any]]
#: Compliance's signature on what it sends the ledger (``common.authority.SigningKey.sign``).
Sign = Callable[[Command], Command]


async def decide_customer(session: AsyncSession, snap: Snapshot, cmd: CreateCustomer) -> Decided:
    verdict = rules.customer_jurisdiction(cmd.country_code)
    if not verdict.refused:
        snap.register(
            cmd.ctx.tenant_id,
            cmd.ctx.mode,
            cmd.customer_id,
            "customer",
            cmd.customer_id,
            cmd.country_code.upper(),
        )
    return verdict, {"country_code": cmd.country_code, "account_type": cmd.account_type}


def _owner_check(snap: Snapshot, cmd: Any, customer_id: str | None, rule: str) -> Decided:
    t, m = cmd.ctx.tenant_id, cmd.ctx.mode
    country = snap.country_of(t, m, customer_id)
    inputs = {
        "customer_id": customer_id,
        "customer_country": country,
        "customer_known": snap.party(t, m, customer_id) is not None,
    }
    if country is not None:
        refusal = rules.parties_jurisdiction([PartyFacts("source", customer_id or "", customer_id, country)])
        if refusal:
            return refusal, inputs
    return Verdict("allow", rule), inputs


async def decide_wallet(session: AsyncSession, snap: Snapshot, cmd: CreateWallet) -> Decided:
    verdict, inputs = _owner_check(snap, cmd, cmd.customer_id, "owner_jurisdiction")
    if not verdict.refused:
        snap.register(cmd.ctx.tenant_id, cmd.ctx.mode, cmd.wallet_id, "wallet", cmd.customer_id)
    return verdict, {**inputs, "symbol": cmd.symbol, "chain": cmd.chain}


async def decide_virtual_account(session: AsyncSession, snap: Snapshot, cmd: CreateVirtualAccount) -> Decided:
    verdict, inputs = _owner_check(snap, cmd, cmd.customer_id, "owner_jurisdiction")
    if not verdict.refused:
        snap.register(
            cmd.ctx.tenant_id, cmd.ctx.mode, cmd.virtual_account_id, "virtual_account", cmd.customer_id
        )
    return verdict, {**inputs, "currency": cmd.currency}


async def decide_deposit(session: AsyncSession, snap: Snapshot, cmd: SandboxDeposit) -> Decided:
    va = snap.party(cmd.ctx.tenant_id, cmd.ctx.mode, cmd.virtual_account_id)
    verdict, inputs = _owner_check(snap, cmd, va.customer_id if va else None, "owner_jurisdiction")
    return verdict, {**inputs, "virtual_account_id": cmd.virtual_account_id, "amount": cmd.amount}


def _transfer_parties(snap: Snapshot, cmd: CreateTransfer) -> tuple[list[PartyFacts], str | None]:
    t, m = cmd.ctx.tenant_id, cmd.ctx.mode
    parties: list[PartyFacts] = []
    source_customer: str | None = None
    for role, side in (("source", cmd.source), ("destination", cmd.destination)):
        if side.provider_wallet_id:
            w = snap.party(t, m, side.provider_wallet_id)
            owner = w.customer_id if w else None
            parties.append(
                PartyFacts(
                    role, side.provider_wallet_id, owner, snap.country_of(t, m, side.provider_wallet_id)
                )
            )
            if role == "source":
                source_customer = source_customer or owner
        if side.customer_id:
            parties.append(
                PartyFacts(role, side.customer_id, side.customer_id, snap.country_of(t, m, side.customer_id))
            )
            if role == "source":
                source_customer = source_customer or side.customer_id
    ea = snap.external_account(t, m, cmd.destination.external_account_id)
    if ea is not None:
        parties.append(
            PartyFacts(
                "destination", ea.external_account_id, ea.customer_id, snap.country_of(t, m, ea.customer_id)
            )
        )
    return parties, source_customer


async def decide_transfer(session: AsyncSession, snap: Snapshot, cmd: CreateTransfer) -> Decided:
    t, m = cmd.ctx.tenant_id, cmd.ctx.mode
    amount = rules.parse_amount(cmd.amount)
    if amount is None:
        return rules.invalid_amount(cmd.amount), {"amount": cmd.amount}
    dst = cmd.destination
    if dst.address and snap.screened_on(dst.address, dst.chain or cmd.source.chain):
        return rules.address_screened(dst.address), {"destination_address": dst.address}
    currency = (cmd.currency if cmd.kind == "transfer" else dst.currency).upper()
    route = (dst.payment_rail.lower(), currency)
    routes, cap = await snap.policy(session, t, m)
    parties, source_customer = _transfer_parties(snap, cmd)
    live = t in snap.live  # admin's record, never the gateway's ctx.live_enabled
    if m == "production" and cmd.ctx.live_enabled != live:
        STAMP_DISAGREED.labels("compliance", "live_enabled").inc()
    facts = TransferFacts(
        mode=m,
        live_enabled=live,
        kind=cmd.kind,
        amount=amount,
        currency=cmd.currency.upper(),
        route=route,
        route_approved=(m == "sandbox" or route in routes),
        parties=parties,
        source_customer_id=source_customer,
        external_account_id=dst.external_account_id,
        external_account=snap.external_account(t, m, dst.external_account_id),
        cap=cap,
    )
    day = snap.day
    inputs: dict[str, Any] = {
        "kind": cmd.kind,
        "amount": str(amount),
        "currency": facts.currency,
        "route": {"rail": route[0], "currency": route[1], "approved": facts.route_approved},
        "live_enabled": live,
        "parties": [
            {"role": p.role, "id": p.party_id, "customer_id": p.customer_id, "country_code": p.country}
            for p in parties
        ],
        "external_account": None
        if facts.external_account is None
        else {
            "id": facts.external_account.external_account_id,
            "customer_id": facts.external_account.customer_id,
            "rail": facts.external_account.rail,
            "currency": facts.external_account.currency,
            "approved": facts.external_account.approved,
        },
        "cap": None if cap is None else cap.as_inputs(),
        "day": day.isoformat(),
    }
    verdict = rules.check_transfer(facts)
    if verdict.refused:
        return verdict, inputs
    assert cap is not None
    # The daily cap is taken for the whole batch at once (compliance.allowance.allot_batch).
    snap.claim(Claim(cmd.command_id, cmd.transfer_id, t, m, facts.currency, day, amount, cap.daily, facts))
    return verdict, inputs


def refused_early(cmd: Command, disabled: set[str], holders: dict[str, str | None]) -> Decided | None:
    """A command refused before its rules are read: a transfer whose id another command holds
    (``holders``: transfer id -> the command holding it, None for a hold that predates
    recording it; a transfer decided here takes its id), then anything but a deposit of a
    tenant an operator disabled."""
    if isinstance(cmd, CreateTransfer):
        if cmd.transfer_id in holders and holders[cmd.transfer_id] != cmd.command_id:
            TRANSFER_IDS_REUSED.labels("compliance").inc()
            return rules.transfer_id_reused(), {"transfer_id": cmd.transfer_id}
        holders[cmd.transfer_id] = cmd.command_id
    if cmd.ctx.tenant_id in disabled and not isinstance(cmd, SandboxDeposit):
        return rules.tenant_disabled(), {"tenant_disabled": True}
    return None


def _cap_refusal(claim: Claim, used: Decimal, inputs: dict[str, Any]) -> Decided:
    remaining = max(claim.daily - used, Decimal(0))
    return rules.daily_cap_exceeded(claim.context, remaining), {**inputs, "used": str(used)}


DECIDERS: dict[type, Any] = {
    CreateCustomer: decide_customer,
    CreateWallet: decide_wallet,
    CreateVirtualAccount: decide_virtual_account,
    SandboxDeposit: decide_deposit,
    CreateTransfer: decide_transfer,
}


def refusal_result(cmd: Command, v: Verdict) -> Result:
    details = {**v.details}
    if v.reason:
        details["reason"] = v.reason
    # the code a reason travels with is the reason table's (docs/guides/errors.md, "Reasons")
    code = reason_code(v.reason, ErrorCode(v.code))
    return error_result(cmd, ServiceError(code, v.message or "refused by policy", details=details))


def _reply(cmd: Command, result: Result, topics: Topics) -> OutMessage:
    """The answer to the caller (no topic for a command nobody waits for, or for an address
    that is not a reply topic: not published)."""
    to = replies.address("compliance", topics.prefix, cmd.ctx.reply_to) or ""
    return OutMessage(to, encode(result), partition=0, request_id=cmd.ctx.request_id)


def readdressed(out: OutMessage, cmd: Command, topics: Topics, sign: Sign, fresh: bool = False) -> OutMessage:
    """The outcome already decided for ``cmd``'s command id, answered to ``cmd``'s reply address.

    A retry after a gateway died carries the same command id (derived from the
    Idempotency-Key) but the reply topic of the gateway that is waiting now: the decision is
    the stored one, only the address is new. A stored decision sent to the ledger again is
    signed again (``fresh`` False: it was decided earlier), so its grant has not expired
    meanwhile; the signature never covers the reply address.
    """
    rid = cmd.ctx.request_id  # in the headers of what is published, with the request's trace
    if out.topic != topics.ledger_commands:  # a refusal or answer: to the caller
        to = replies.address("compliance", topics.prefix, cmd.ctx.reply_to or out.topic) or ""
        return OutMessage(to, out.payload, out.key, 0, request_id=rid)
    if fresh and (not cmd.ctx.reply_to or cmd.ctx.reply_to == stamped_reply_to(out)):
        return dataclasses.replace(out, request_id=rid)
    stamped = msgspec.json.decode(out.payload, type=type(cmd))
    ctx = msgspec.structs.replace(
        stamped.ctx, reply_to=cmd.ctx.reply_to or stamped.ctx.reply_to, request_id=rid
    )
    payload = encode(sign(msgspec.structs.replace(stamped, ctx=ctx)))
    return OutMessage(out.topic, payload, out.key, out.partition, request_id=rid)


def stamped_reply_to(out: OutMessage) -> str | None:
    return msgspec.json.decode(out.payload, type=_Addressed).ctx.reply_to


class _Reply(msgspec.Struct):
    reply_to: str | None = None


class _Addressed(msgspec.Struct):
    ctx: _Reply


async def decide_batch(
    session: AsyncSession, snap: Snapshot, topics: Topics, cmds: Sequence[Command], sign: Sign
) -> tuple[list[OutMessage], repo.BatchWrite]:
    """Decide every command of a batch in the caller's transaction: what to publish, and what
    the batch's write statement writes (:func:`write`).

    One statement reads what the batch needs (and locks its transfers' cap usage rows);
    commands are decided in order in memory; the transfers' daily cap is then settled for the
    whole batch in memory (:func:`compliance.allowance.allot`), and only then is each
    decision addressed and recorded.
    """
    wanted = snap.wanted(cmds)
    read = await repo.read_batch(session, wanted)
    deciding = {c.command_id for c in cmds if type(c) in DECIDERS}
    stored = {cid: found for cid, found in read.stored.items() if cid in deciding}
    snap.absorb(read, wanted)
    holders = dict(read.taken)  # transfer id -> the command holding it, this batch's too
    # An outcome, or a command decided in this batch (its outcome comes after the cap).
    plan: list[OutMessage | Command] = []
    decided: dict[str, tuple[Command, Verdict, dict[str, Any]]] = {}
    for cmd in cmds:
        request_id_var.set(cmd.ctx.request_id)
        prev = stored.get(cmd.command_id)
        if prev is not None:  # redelivered or retried: publish the same outcome again
            plan.append(dataclasses.replace(_again(prev, cmd, topics, sign), recreated=True))
            continue
        if cmd.command_id in decided:  # the same command twice in one batch
            plan.append(cmd)
            continue
        decider = DECIDERS.get(type(cmd))
        if decider is None:
            plan.append(_reply(cmd, await policy_admin.handle(session, snap, cmd), topics))
            snap.usage.clear()  # it may have given cap back: the totals are read again below
            continue
        early = refused_early(cmd, read.disabled, holders)
        decided[cmd.command_id] = (cmd, *(early or await decider(session, snap, cmd)))
        plan.append(cmd)
    claims = snap.take_claims()
    refused, usage, holds = await allowance.allot_batch(session, claims, snap.usage)
    by_command = {c.command_id: c for c in claims}
    outcomes: dict[str, OutMessage] = {}
    rows: list[dict[str, Any]] = []
    for command_id, (cmd, verdict, inputs) in decided.items():
        if command_id in refused:
            verdict, inputs = _cap_refusal(by_command[command_id], refused[command_id], inputs)
        outcomes[command_id], row = _record(cmd, verdict, inputs, topics, sign)
        rows.append(row | holds.get(command_id, {}))  # a granted transfer's hold, on its decision
    # A decision's outcome is recreated from its row when the command comes again (``_again``):
    # published after commit with no outbox row (common.outbox). A policy answer is not.
    planned = [
        p
        if isinstance(p, OutMessage)
        else dataclasses.replace(
            readdressed(outcomes[p.command_id], p, topics, sign, fresh=True), recreated=True
        )
        for p in plan
    ]
    writes = repo.BatchWrite(usage=usage, parties=snap.take_parties(), decisions=rows)
    return [o for o in planned if o.topic], writes


async def write(
    session: AsyncSession, writes: repo.BatchWrite, outs: Sequence[OutMessage], outbox: Outbox
) -> list[OutMessage]:
    """The batch's last statement: its writes and ``outs`` in the outbox (with the deletion of
    rows published earlier). Returns the messages written, for dispatch after commit."""
    for out in outs:
        outbox.add(session, out)
    msgs, writes.pruned = outbox.staged(session)
    writes.outbox = [
        {"topic": m.topic, "key": m.key, "partition": m.partition, "payload": m.payload} for m in msgs
    ]
    ids = await repo.write_batch(session, writes)
    return outbox.written(session, msgs, ids, writes.pruned)


def _again(prev: repo.Stored, cmd: Command, topics: Topics, sign: Sign) -> OutMessage:
    """The outcome ``prev`` decided for ``cmd``'s command id, published again: its stored
    bytes, or for a command it approved, ``cmd`` stamped with the decision and signed again
    (what came again under the command id is the same command: the gateway refuses another
    body under its Idempotency-Key; only the context, the caller's address and deadline, is
    the new caller's)."""
    if prev.out_payload is None:
        decision = Decision(decision_id=prev.id, outcome=_approved(prev.outcome), rule=prev.rule)
        stamped = sign(msgspec.structs.replace(cmd, decision=decision, authority=None))
        return OutMessage(
            topics.ledger_commands,
            encode(stamped),
            key=partition_key(cmd).encode(),
            request_id=cmd.ctx.request_id,
        )
    out = OutMessage(
        prev.out_topic, bytes(prev.out_payload), prev.out_key and bytes(prev.out_key), prev.out_partition
    )
    return readdressed(out, cmd, topics, sign)


def _approved(outcome: str) -> Literal["allow", "review"]:
    """The outcome an approved command is stamped with (the decision row's may name the rule's)."""
    return "review" if outcome == "review" else "allow"


def _record(
    cmd: Command, verdict: Verdict, inputs: dict[str, Any], topics: Topics, sign: Sign
) -> tuple[OutMessage, dict[str, Any]]:
    """What to publish for a decided command, and its decision row."""
    decision_id = new_id("dec")
    if verdict.refused:
        out = _reply(cmd, refusal_result(cmd, verdict), topics)
    else:
        decision = Decision(decision_id=decision_id, outcome=_approved(verdict.outcome), rule=verdict.rule)
        # Signed over the decision and everything it approves: the ledger applies nothing
        # compliance did not sign.
        stamped = sign(msgspec.structs.replace(cmd, decision=decision, authority=None))
        out = OutMessage(topics.ledger_commands, encode(stamped), key=partition_key(cmd).encode())
    row = {
        "id": decision_id,
        "command_id": cmd.command_id,
        "request_id": cmd.ctx.request_id,
        "tenant_id": cmd.ctx.tenant_id,
        "mode": cmd.ctx.mode,
        "command_type": type(cmd).__name__,
        "outcome": verdict.outcome,
        "rule": verdict.rule,
        "reason": verdict.reason or (verdict.code if verdict.refused else None),
        "inputs": json.dumps(inputs, default=str),
        "out_topic": out.topic,
        "out_key": out.key,
        "out_partition": out.partition,
        # Published once, kept once (the ledger's): signed again if it comes again.
        "out_payload": None if out.topic == topics.ledger_commands else out.payload,
        "transfer_id": _transfer_of(cmd, verdict),
    }
    return out, row


def _transfer_of(cmd: Command, verdict: Verdict) -> str | None:
    """The transfer id a decision holds: its transfer's, unless it refused the id as another's."""
    if not isinstance(cmd, CreateTransfer) or verdict.reason == Reason.TRANSFER_ID_REUSED:
        return None
    return cmd.transfer_id

"""The command contracts' wire bytes (libs/common/contracts/commands.py) stay as contract v1
encodes them: tag, field names, field order and defaults. The structs may share base classes;
what a consumer decodes must not change. The expected bytes were taken from the commands
before any of them shared a base. Round 5 added one field to every command, ``authority``
(null unless a decider signed it: docs/security.md, "no single point of trust"), right after
``ctx``; a message without it still decodes (test_v1_bytes_without_authority_still_decode)."""

from __future__ import annotations

import typing
from typing import Any

import msgspec.inspect as mi
import pytest

from common.contracts import ComplianceCommand, LedgerCommand, WebhooksCommand, commands, decode, encode
from common.contracts.base import Command, Ctx

pytestmark = pytest.mark.unit

CTX = Ctx(request_id="r", tenant_id="t", mode="sandbox")
UNIONS = (LedgerCommand, ComplianceCommand, WebhooksCommand)  # what the services decode with

# One sample each: required fields hold their own name (or the last literal, 7, true), the others
# keep their default; nested structs are filled in full. ``%s`` stands for the encoded CTX.
WIRE: dict[type[Command], bytes] = {
    commands.CreateCustomer: (
        b'{"type":"customer.create.v1","customer_id":"customer_id","account_type":"individual",'
        b'"email":"email","country_code":"country_code","service_user_id":"service_user_id",'
        b'"full_name":null,"company_name":null,"registration_number":null,"phone_e164":null,'
        b'"onboarding_authorization_id":null,"command_id":"c","ctx":%s,"authority":null,"decision":null}'
    ),
    commands.CreateWallet: (
        b'{"type":"wallet.create.v1","wallet_id":"wallet_id","customer_id":"customer_id",'
        b'"symbol":"symbol","chain":"chain","command_id":"c","ctx":%s,"authority":null,"decision":null}'
    ),
    commands.CreateVirtualAccount: (
        b'{"type":"virtual_account.create.v1","virtual_account_id":"virtual_account_id",'
        b'"customer_id":"customer_id","currency":"currency","destination":{"rail":"rail",'
        b'"currency":"currency","address":"address","provider_wallet_id":"provider_wallet_id"},'
        b'"command_id":"c","ctx":%s,"authority":null,"decision":null}'
    ),
    commands.CreateTransfer: (
        b'{"type":"transfer.create.v1","transfer_id":"transfer_id","kind":"transfer",'
        b'"source":{"payment_rail":"payment_rail","currency":"currency","chain":"chain","amount":"amount",'
        b'"customer_id":"customer_id","from_address":"from_address","address":"address",'
        b'"provider_wallet_id":"provider_wallet_id","external_account_id":"external_account_id",'
        b'"deposit_id":"deposit_id","bank_account":{"account_number":"account_number",'
        b'"routing_number":"routing_number","iban":"iban","bic":"bic"}},'
        b'"destination":{"payment_rail":"payment_rail","currency":"currency","chain":"chain",'
        b'"amount":"amount","customer_id":"customer_id","from_address":"from_address","address":"address",'
        b'"provider_wallet_id":"provider_wallet_id","external_account_id":"external_account_id",'
        b'"deposit_id":"deposit_id","bank_account":{"account_number":"account_number",'
        b'"routing_number":"routing_number","iban":"iban","bic":"bic"}},"amount":"amount",'
        b'"currency":"currency","idempotency_key":"idempotency_key","developer_fee":null,"command_id":"c",'
        b'"ctx":%s,"authority":null,"decision":null}'
    ),
    commands.SandboxDeposit: (
        b'{"type":"sandbox.deposit.v1","deposit_id":"deposit_id",'
        b'"virtual_account_id":"virtual_account_id","amount":"amount","command_id":"c","ctx":%s,'
        b'"authority":null,'
        b'"decision":null}'
    ),
    commands.GetResource: (
        b'{"type":"resource.get.v1","resource":"resource","resource_id":"resource_id","command_id":"c",'
        b'"ctx":%s,"authority":null,"decision":null}'
    ),
    commands.ListResources: (
        b'{"type":"resource.list.v1","resource":"resource","limit":10,"starting_after":null,'
        b'"command_id":"c","ctx":%s,"authority":null,"decision":null}'
    ),
    commands.ReviewTransfer: (
        b'{"type":"transfer.review.v1","decision":"reject","transfer_id":"transfer_id","command_id":"c",'
        b'"ctx":%s,"authority":null}'
    ),
    commands.GetFeeBalances: (
        b'{"type":"fee_balances.get.v1","command_id":"c","ctx":%s,"authority":null,"decision":null}'
    ),
    commands.ListWalletTransactions: (
        b'{"type":"wallet.transactions.list.v1","wallet_id":"wallet_id","limit":10,"starting_after":null,'
        b'"command_id":"c","ctx":%s,"authority":null,"decision":null}'
    ),
    commands.SettleTransfer: (
        b'{"type":"transfer.settle.v1","transfer_id":"transfer_id","outcome":"failed","command_id":"c",'
        b'"ctx":%s,"authority":null,"decision":null}'
    ),
    commands.Reconcile: (
        b'{"type":"ledger.reconcile.v1","limit":100,"command_id":"c","ctx":%s,'
        b'"authority":null,"decision":null}'
    ),
    commands.VerifyJournal: (
        b'{"type":"ledger.journal.verify.v1","target_tenant_id":null,"mode":null,"command_id":"c",'
        b'"ctx":%s,"authority":null,"decision":null}'
    ),
    commands.ApproveRoute: (
        b'{"type":"policy.route.approve.v1","rail":"rail","currency":"currency","command_id":"c","ctx":%s,'
        b'"authority":null,'
        b'"decision":null}'
    ),
    commands.RevokeRoute: (
        b'{"type":"policy.route.revoke.v1","rail":"rail","currency":"currency","command_id":"c","ctx":%s,'
        b'"authority":null,'
        b'"decision":null}'
    ),
    commands.SetTransferCap: (
        b'{"type":"policy.cap.set.v1","per_transfer":"per_transfer","daily":"daily",'
        b'"review_threshold":null,"command_id":"c","ctx":%s,"authority":null,"decision":null}'
    ),
    commands.UpsertExternalAccount: (
        b'{"type":"policy.external_account.upsert.v1","external_account_id":"external_account_id",'
        b'"customer_id":"customer_id","rail":"rail","currency":"currency","approved":true,'
        b'"account_number":null,"routing_number":null,"iban":null,"bic":null,"command_id":"c","ctx":%s,'
        b'"authority":null,'
        b'"decision":null}'
    ),
    commands.ListDecisions: (
        b'{"type":"policy.decisions.list.v1","limit":50,"starting_after":null,"target_tenant_id":null,'
        b'"command_id":"c","ctx":%s,"authority":null,"decision":null}'
    ),
    commands.GetPolicyStatus: (
        b'{"type":"policy.status.get.v1","command_id":"c","ctx":%s,"authority":null,"decision":null}'
    ),
    commands.ReleaseAllowance: (
        b'{"type":"policy.allowance.release.v1","transfer_id":"transfer_id","command_id":"c","ctx":%s,'
        b'"authority":null,'
        b'"decision":null}'
    ),
    commands.AddScreenedAddress: (
        b'{"type":"policy.screening.add.v1","chain":"chain","address":"address","reason":"reason",'
        b'"command_id":"c","ctx":%s,"authority":null,"decision":null}'
    ),
    commands.RemoveScreenedAddress: (
        b'{"type":"policy.screening.remove.v1","chain":"chain","address":"address","command_id":"c",'
        b'"ctx":%s,"authority":null,"decision":null}'
    ),
    commands.ListScreenedAddresses: (
        b'{"type":"policy.screening.list.v1","limit":50,"starting_after":null,"command_id":"c","ctx":%s,'
        b'"authority":null,'
        b'"decision":null}'
    ),
    commands.CreateWebhook: (
        b'{"type":"webhook.create.v1","webhook_id":"webhook_id","endpoint_url":"endpoint_url",'
        b'"enabled_events":null,"command_id":"c","ctx":%s,"authority":null,"decision":null}'
    ),
    commands.GetWebhook: (
        b'{"type":"webhook.get.v1","webhook_id":"webhook_id","command_id":"c","ctx":%s,'
        b'"authority":null,"decision":null}'
    ),
    commands.ListWebhooks: (
        b'{"type":"webhook.list.v1","limit":10,"starting_after":null,"command_id":"c","ctx":%s,'
        b'"authority":null,'
        b'"decision":null}'
    ),
    commands.RotateWebhookSecret: (
        b'{"type":"webhook.rotate.v1","webhook_id":"webhook_id","command_id":"c","ctx":%s,'
        b'"authority":null,"decision":null}'
    ),
    commands.UpdateWebhook: (
        b'{"type":"webhook.update.v1","webhook_id":"webhook_id","endpoint_url":null,"enabled_events":null,'
        b'"status":null,"command_id":"c","ctx":%s,"authority":null,"decision":null}'
    ),
    commands.DeleteWebhook: (
        b'{"type":"webhook.delete.v1","webhook_id":"webhook_id","command_id":"c","ctx":%s,'
        b'"authority":null,"decision":null}'
    ),
    commands.EnableWebhook: (
        b'{"type":"webhook.enable.v1","webhook_id":"webhook_id","command_id":"c","ctx":%s,'
        b'"authority":null,"decision":null}'
    ),
    commands.ReplayDelivery: (
        b'{"type":"delivery.replay.v1","delivery_id":"delivery_id","command_id":"c","ctx":%s,'
        b'"authority":null,"decision":null}'
    ),
    commands.ReplayDeliveries: (
        b'{"type":"delivery.replay_bulk.v1","webhook_id":"webhook_id","since":null,"command_id":"c",'
        b'"ctx":%s,"authority":null,"decision":null}'
    ),
    commands.ListDeliveries: (
        b'{"type":"delivery.list.v1","target_tenant_id":null,"webhook_id":null,"status":null,"limit":50,'
        b'"starting_after":null,"command_id":"c","ctx":%s,"authority":null,"decision":null}'
    ),
    commands.GetWebhookStatus: (
        b'{"type":"webhook.status.get.v1","command_id":"c","ctx":%s,"authority":null,"decision":null}'
    ),
    commands.ListEvents: (
        b'{"type":"event.list.v1","event_type":null,"limit":10,"starting_after":null,'
        b'"ending_before":null,"order":"desc","command_id":"c",'
        b'"ctx":%s,"authority":null,"decision":null}'
    ),
    commands.GetEvent: (
        b'{"type":"event.get.v1","event_id":"event_id","command_id":"c","ctx":%s,'
        b'"authority":null,"decision":null}'
    ),
}


def _fill(t: mi.Type, name: str) -> Any:
    if isinstance(t, mi.StrType):
        return name
    if isinstance(t, mi.IntType):
        return 7
    if isinstance(t, mi.BoolType):
        return True
    if isinstance(t, mi.LiteralType):
        return t.values[-1]
    if isinstance(t, mi.UnionType):
        return _fill(next(x for x in t.types if not isinstance(x, mi.NoneType)), name)
    if isinstance(t, mi.ListType):
        return [_fill(t.item_type, name)]
    if isinstance(t, mi.StructType):
        return t.cls(**{f.name: _fill(f.type, f.name) for f in t.fields})
    raise TypeError(f"no sample for {t}")


def _sample(cls: type[Command]) -> Command:
    info = mi.type_info(cls)
    assert isinstance(info, mi.StructType)
    own = {
        f.name: _fill(f.type, f.name)
        for f in info.fields
        if f.required and f.name not in ("command_id", "ctx")
    }
    return cls(command_id="c", ctx=CTX, **own)


def _wire_commands() -> list[type[Command]]:
    return list(dict.fromkeys(c for union in UNIONS for c in typing.get_args(union)))


def test_every_command_on_the_wire_has_its_expected_bytes() -> None:
    assert set(WIRE) == set(_wire_commands())


@pytest.mark.parametrize("cls", _wire_commands(), ids=lambda c: c.__name__)
def test_command_bytes_are_contract_v1(cls: type[Command]) -> None:
    sample = _sample(cls)
    raw = encode(sample)
    assert raw == WIRE[cls] % encode(CTX)
    for union in UNIONS:
        if cls in typing.get_args(union):
            assert decode(raw, union) == sample


@pytest.mark.parametrize("cls", _wire_commands(), ids=lambda c: c.__name__)
def test_v1_bytes_without_authority_still_decode(cls: type[Command]) -> None:
    """A command written before round 5 (no ``authority``) decodes as one without authority."""
    old = (WIRE[cls] % encode(CTX)).replace(b',"authority":null', b"")
    for union in UNIONS:
        if cls in typing.get_args(union):
            assert decode(old, union) == _sample(cls)


def test_an_event_list_written_before_ordering_decodes_as_newest_first() -> None:
    """``ending_before`` and ``order`` came later, with defaults: a message without them is the
    newest-first list it always was."""
    old = (
        b'{"type":"event.list.v1","event_type":null,"limit":10,"starting_after":"evt_1","command_id":"c",'
        b'"ctx":%s,"authority":null,"decision":null}' % encode(CTX)
    )
    cmd = decode(old, WebhooksCommand)
    assert isinstance(cmd, commands.ListEvents)
    assert (cmd.order, cmd.ending_before, cmd.starting_after) == ("desc", None, "evt_1")

"""Commands, one tagged struct each. The tag names the message and its version."""

from __future__ import annotations

from typing import Literal

import msgspec

from common.contracts.base import Command, Envelope


class BankAccount(msgspec.Struct, kw_only=True, omit_defaults=True):
    account_number: str | None = None
    routing_number: str | None = None
    iban: str | None = None
    bic: str | None = None


class Party(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Transfer party (a transfer's or payout's ``source`` or ``destination``), normalised by
    the gateway (codes uppercase)."""

    payment_rail: str
    currency: str
    chain: str | None = None
    amount: str | None = None
    customer_id: str | None = None
    from_address: str | None = None
    address: str | None = None
    provider_wallet_id: str | None = None
    external_account_id: str | None = None
    deposit_id: str | None = None
    bank_account: BankAccount | None = None


class DeveloperFee(msgspec.Struct, kw_only=True, omit_defaults=True):
    percentage: str | None = None  # decimal text, never a float
    flat_amount: str | None = None


class VADestination(msgspec.Struct, kw_only=True, omit_defaults=True):
    rail: str
    currency: str
    address: str | None = None
    provider_wallet_id: str | None = None


# ---- ledger resources (pass through compliance first) ----


class CreateCustomer(Command, tag="customer.create.v1"):
    customer_id: str
    account_type: Literal["individual", "business"]
    email: str
    country_code: str
    service_user_id: str
    full_name: str | None = None
    company_name: str | None = None
    registration_number: str | None = None
    phone_e164: str | None = None
    onboarding_authorization_id: str | None = None


class CreateWallet(Command, tag="wallet.create.v1"):
    wallet_id: str
    customer_id: str
    symbol: str
    chain: str


class CreateVirtualAccount(Command, tag="virtual_account.create.v1"):
    virtual_account_id: str
    customer_id: str
    currency: str
    destination: VADestination


class CreateTransfer(Command, tag="transfer.create.v1"):
    """A transfer or a payout (``kind``); ``amount`` is a decimal string > 0."""

    transfer_id: str
    kind: Literal["transfer", "payout"]
    source: Party
    destination: Party
    amount: str
    currency: str
    idempotency_key: str
    developer_fee: DeveloperFee | None = None


class SandboxDeposit(Command, tag="sandbox.deposit.v1"):
    deposit_id: str
    virtual_account_id: str
    amount: str


class GetResource(Command, tag="resource.get.v1"):
    resource: str
    resource_id: str


class ListWalletTransactions(Command, tag="wallet.transactions.list.v1"):
    """The movements of a wallet's available balance, newest first, each with the balance
    after it (``GET /v1/wallets/{id}/transactions``)."""

    wallet_id: str
    limit: int = 10
    starting_after: str | None = None


class GetFeeBalances(Command, tag="fee_balances.get.v1"):
    """The tenant's developer-fee balance per currency (``GET /v1/fee-balances``)."""


class ListResources(Command, tag="resource.list.v1"):
    resource: str
    limit: int = 10
    starting_after: str | None = None


class ReviewTransfer(Envelope, tag="transfer.review.v1"):
    """An operator's verdict (contract v1 names it ``decision``). An operator review is not
    compliance-stamped, so it is an :class:`Envelope`, not a :class:`Command`: its
    ``decision`` is the verdict, not the stamp."""

    decision: Literal["approve", "reject"]
    transfer_id: str


class SettleTransfer(Command, tag="transfer.settle.v1"):
    """An operator settles an asynchronous transfer (an external withdrawal in production)."""

    transfer_id: str
    outcome: Literal["completed", "failed"]


class Reconcile(Command, tag="ledger.reconcile.v1"):
    """An operator's reconciliation of one tenant and mode (docs/operations.md, "The
    administration endpoint"): totals per currency and every row that breaks an invariant of
    the journal. Read-only."""

    limit: int = 100  # offending rows listed per check


class VerifyJournal(Command, tag="ledger.journal.verify.v1"):
    """An operator's check of the journal's hash chains (docs/security.md, "The tamper-evident
    journal"), narrowed to a tenant and a mode when given. Read-only."""

    target_tenant_id: str | None = None
    mode: str | None = None


# ---- compliance policy (from admin) ----


class RouteRef(Command):
    """A command about one route (a payment rail and its currency) of the tenant's mode."""

    rail: str
    currency: str


class ApproveRoute(RouteRef, tag="policy.route.approve.v1"):
    """An operator approves the route for the tenant's mode (production moves money only over
    approved routes)."""


class RevokeRoute(RouteRef, tag="policy.route.revoke.v1"):
    """An operator withdraws the route's approval."""


class SetTransferCap(Command, tag="policy.cap.set.v1"):
    per_transfer: str
    daily: str
    review_threshold: str | None = None


class UpsertExternalAccount(Command, tag="policy.external_account.upsert.v1"):
    external_account_id: str
    customer_id: str
    rail: str
    currency: str
    approved: bool
    account_number: str | None = None
    routing_number: str | None = None
    iban: str | None = None
    bic: str | None = None


class ListDecisions(Command, tag="policy.decisions.list.v1"):
    limit: int = 50
    starting_after: str | None = None
    target_tenant_id: str | None = None


class GetPolicyStatus(Command, tag="policy.status.get.v1"):
    """What enable_live needs: approved production route and production cap."""


class ScreenedAddressRef(Command):
    """A command about one on-chain address of the screening list."""

    chain: str
    address: str


class AddScreenedAddress(ScreenedAddressRef, tag="policy.screening.add.v1"):
    """Operators screen an on-chain address: transfers to it are refused (docs/guides/money.md,
    "Withdrawing to an external address")."""

    reason: str


class RemoveScreenedAddress(ScreenedAddressRef, tag="policy.screening.remove.v1"):
    """Operators take an address off the list: transfers to it are decided as any other."""


class ListScreenedAddresses(Command, tag="policy.screening.list.v1"):
    limit: int = 50
    starting_after: str | None = None


class ReleaseAllowance(Command, tag="policy.allowance.release.v1"):
    """From the ledger: a transfer compliance approved was refused or failed there, so its
    daily-cap allowance is given back (once; a redelivery finds nothing left to release).

    Its command id is ``rel_<the failed command's id>`` (:attr:`failed_command_id`): compliance
    gives back only the hold that command took."""

    transfer_id: str

    @property
    def failed_command_id(self) -> str:
        """The command whose failure this release reports ("" when it names none)."""
        named = self.command_id.startswith(RELEASE_PREFIX)
        return self.command_id.removeprefix(RELEASE_PREFIX) if named else ""


#: A release's command id is this and the failed command's (``ReleaseAllowance``).
RELEASE_PREFIX = "rel_"


# ---- webhooks ----


class CreateWebhook(Command, tag="webhook.create.v1"):
    webhook_id: str
    endpoint_url: str
    enabled_events: list[str] | None = None  # None: every delivered type


class ListEvents(Command, tag="event.list.v1"):
    """The tenant's events of this mode by ``sequence``, newest first (``order="asc"``: oldest
    first), optionally one type; a page starts after ``starting_after`` or ends before
    ``ending_before`` (event ids), never both (docs/guides/webhooks.md, "Order and recovery")."""

    event_type: str | None = None
    limit: int = 10
    starting_after: str | None = None
    ending_before: str | None = None
    order: str = "desc"


class GetEvent(Command, tag="event.get.v1"):
    event_id: str


class WebhookRef(Command):
    """A command about one of the tenant's webhook endpoints, named by ``webhook_id``."""

    webhook_id: str


class GetWebhook(WebhookRef, tag="webhook.get.v1"):
    """The endpoint as ``GET /v1/webhooks/{id}`` shows it (never its secret)."""


class ListWebhooks(Command, tag="webhook.list.v1"):
    limit: int = 10
    starting_after: str | None = None


class RotateWebhookSecret(WebhookRef, tag="webhook.rotate.v1"):
    """A new signing secret, returned once; the old one keeps signing alongside for a while."""


class UpdateWebhook(WebhookRef, tag="webhook.update.v1"):
    """The partner changes its endpoint's URL (vetted as at creation), its event types or its
    status; a field left None is kept."""

    endpoint_url: str | None = None
    enabled_events: list[str] | None = None
    status: Literal["enabled", "disabled"] | None = None


class DeleteWebhook(WebhookRef, tag="webhook.delete.v1"):
    """The partner deletes its endpoint: answered once as ``deleted``; afterwards it is not
    found, not listed, and sent nothing (its pending deliveries end)."""


class EnableWebhook(WebhookRef, tag="webhook.enable.v1"):
    """An operator re-enables an endpoint the service disabled after 5 days without a success."""


class ReplayDelivery(Command, tag="delivery.replay.v1"):
    delivery_id: str


class ReplayDeliveries(WebhookRef, tag="delivery.replay_bulk.v1"):
    """Every dead delivery of one endpoint (created at or after ``since``, RFC 3339) gets one
    more attempt; answers ``{webhook_id, replayed}``."""

    since: str | None = None


class ListDeliveries(Command, tag="delivery.list.v1"):
    target_tenant_id: str | None = None
    webhook_id: str | None = None
    status: str | None = None
    limit: int = 50
    starting_after: str | None = None


class GetWebhookStatus(Command, tag="webhook.status.get.v1"):
    """Whether the tenant has a verified endpoint (one that answered a delivery with 2xx)."""


# What travels on ``ledger.commands``: each command signed by the service that decided it
# (docs/security.md, "Round 5: no single point of trust"): compliance's approved commands,
# admin's operator commands.
LedgerWrite = (
    CreateCustomer
    | CreateWallet
    | CreateVirtualAccount
    | CreateTransfer
    | SandboxDeposit
    | ReviewTransfer
    | SettleTransfer
    | Reconcile
    | VerifyJournal
)
# What travels on ``ledger.reads``: the gateway's reads of ledger resources (no authority).
LedgerRead = GetResource | ListResources | GetFeeBalances | ListWalletTransactions
LedgerCommand = LedgerWrite | LedgerRead
ComplianceCommand = (
    CreateCustomer
    | CreateWallet
    | CreateVirtualAccount
    | CreateTransfer
    | SandboxDeposit
    | ApproveRoute
    | RevokeRoute
    | SetTransferCap
    | UpsertExternalAccount
    | ListDecisions
    | GetPolicyStatus
    | ReleaseAllowance
    | AddScreenedAddress
    | RemoveScreenedAddress
    | ListScreenedAddresses
)
WebhooksCommand = (
    CreateWebhook
    | GetWebhook
    | ListWebhooks
    | RotateWebhookSecret
    | UpdateWebhook
    | DeleteWebhook
    | EnableWebhook
    | ReplayDelivery
    | ReplayDeliveries
    | ListDeliveries
    | GetWebhookStatus
    | ListEvents
    | GetEvent
)


# A consumer's commands decoded by one typed decoder each, built once: mypy takes a union
# alias for a value, not a ``type[T]``, so ``decode(raw, LedgerCommand)`` needed an ignore.
LEDGER_COMMANDS: msgspec.json.Decoder[LedgerWrite] = msgspec.json.Decoder(LedgerWrite)
LEDGER_READS: msgspec.json.Decoder[LedgerRead] = msgspec.json.Decoder(LedgerRead)
COMPLIANCE_COMMANDS: msgspec.json.Decoder[ComplianceCommand] = msgspec.json.Decoder(ComplianceCommand)
WEBHOOKS_COMMANDS: msgspec.json.Decoder[WebhooksCommand] = msgspec.json.Decoder(WebhooksCommand)


def partition_key(cmd: Envelope) -> str:
    """Kafka key: commands touching one wallet (or customer) stay ordered on one partition."""
    if isinstance(cmd, CreateTransfer):
        return cmd.source.provider_wallet_id or cmd.source.customer_id or cmd.ctx.tenant_id
    if isinstance(cmd, CreateWallet | CreateVirtualAccount):
        return cmd.customer_id
    if isinstance(cmd, CreateCustomer):
        return cmd.customer_id
    if isinstance(cmd, SandboxDeposit):
        return cmd.virtual_account_id
    return cmd.ctx.tenant_id

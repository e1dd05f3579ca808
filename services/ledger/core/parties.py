"""Who pays whom: the wallets a transfer names, resolved in memory from the wallets of the
whole batch (read by the batch's first statement: ``ledger.transfers.names``), with the same
rules and refusals as ever.

Routes: ``book`` (provider_wallet to provider_wallet), ``onchain`` (a stablecoin transfer on
one chain), ``external`` (a withdrawal to an address no wallet of the tenant holds:
docs/guides/money.md, "Withdrawing to an external address") and ``payout`` (a
provider_wallet to an external bank account).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from common import addresses
from common.contracts.commands import CreateTransfer
from common.errors import invalid
from common.offerings import PEGS
from ledger.core.effects import missing
from ledger.core.rows import WalletRow

PAYOUT_RAILS = {"ach": "USD", "wire": "USD", "sepa": "EUR", "faster_payments": "GBP"}
WITHDRAWAL_ROUTE = "external"


class WalletIndex:
    """The batch's wallets by id, deposit address and owning customer."""

    def __init__(self, wallets: Sequence[WalletRow]) -> None:
        self.by_id = {w.id: w for w in wallets}
        self.by_address = {w.deposit_address: w for w in wallets}
        self.by_customer: dict[str, list[WalletRow]] = defaultdict(list)
        for w in wallets:  # in id order (the query sorts them)
            self.by_customer[w.customer_id].append(w)

    @staticmethod
    def _scoped(w: WalletRow | None, cmd: CreateTransfer) -> WalletRow | None:
        return w if w is not None and (w.tenant_id, w.mode) == (cmd.ctx.tenant_id, cmd.ctx.mode) else None

    def wallet(self, cmd: CreateTransfer, wallet_id: str, field: str) -> WalletRow:
        w = self._scoped(self.by_id.get(wallet_id), cmd)
        if w is None:
            raise missing("wallet", field)
        return w

    def at_address(self, cmd: CreateTransfer, address: str) -> WalletRow | None:
        return self._scoped(self.by_address.get(address), cmd)

    def of_customer(self, cmd: CreateTransfer, customer_id: str, symbol: str, chain: str) -> list[WalletRow]:
        return [
            w
            for w in self.by_customer.get(customer_id, [])
            if self._scoped(w, cmd) and (w.symbol, w.chain) == (symbol, chain)
        ]


def source(idx: WalletIndex, cmd: CreateTransfer) -> WalletRow:
    s, rail = cmd.source, cmd.source.payment_rail.lower()
    if rail == "provider_wallet":
        if not s.provider_wallet_id:
            raise invalid("source.provider_wallet_id", "a provider_wallet source needs provider_wallet_id")
        w = idx.wallet(cmd, s.provider_wallet_id, "source.provider_wallet_id")
    elif rail == "stablecoin" and cmd.kind == "transfer":
        if not s.customer_id:
            raise invalid("source.customer_id", "an on-chain source needs customer_id")
        if not s.chain:
            raise invalid("source.chain", "an on-chain source needs chain")
        ws = idx.of_customer(cmd, s.customer_id, s.currency.upper(), s.chain.upper())
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


def transfer_destination(idx: WalletIndex, cmd: CreateTransfer, src: WalletRow) -> tuple[WalletRow, str]:
    """The destination wallet and the route (``book`` or ``onchain``)."""
    d, rail = cmd.destination, cmd.destination.payment_rail.lower()
    if rail == "provider_wallet" and d.provider_wallet_id:
        w = idx.wallet(cmd, d.provider_wallet_id, "destination.provider_wallet_id")
    elif rail in ("provider_wallet", "stablecoin") and d.address:
        found = idx.at_address(cmd, d.address)
        if found is None:  # transfers move money between wallets the tenant owns
            raise missing("destination wallet", "destination.address")
        w = found
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


def payout_destination(cmd: CreateTransfer, src: WalletRow) -> None:
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


def is_withdrawal(idx: WalletIndex, cmd: CreateTransfer) -> bool:
    """A stablecoin destination whose address no wallet of the tenant and mode holds leaves
    the suite."""
    d = cmd.destination
    return (
        d.payment_rail.lower() == "stablecoin"
        and bool(d.address)
        and idx.at_address(cmd, d.address or "") is None
    )


def withdrawal_destination(cmd: CreateTransfer, src: WalletRow) -> None:
    """The address must be one of the source wallet's chain (the gateway checked its shape;
    compliance screened it)."""
    d = cmd.destination
    if d.chain and d.chain.upper() != src.chain:
        raise invalid("destination.chain", "a withdrawal stays on the source wallet's chain")
    if d.currency.upper() != cmd.currency:
        raise invalid("destination.currency", "source and destination currency must match")
    if (why := addresses.problem(src.chain, d.address or "")) is not None:
        raise invalid("destination.address", f"{why} ({src.chain})")

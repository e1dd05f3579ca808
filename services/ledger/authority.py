"""Who may make the ledger act (docs/security.md, "Round 5: no single point of trust"): each
command on ``ledger.commands`` carries the signed authority of the service that decided it,
verified here before anything is planned.

- compliance decides what creates or moves something (customers, wallets, virtual accounts,
  sandbox deposits, transfers and payouts), and its grant must carry the decision it stamped;
- admin gives the operator commands (review, settle, reconcile, verify the journal).

Anything else, or anything signed by the other service, with an unknown key, expired or
altered after signing, is refused: dead-lettered with ``authority_invalid``, counted in
``sluice_authority_refused_total``, answered 403 to whoever waits, and never applied (no
allowance is given back for it either: a forgery must not move compliance's accounting).
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from common import authority
from common.authority import AuthorityInvalid, Signer, VerifyKeys
from common.contracts import Envelope
from common.contracts.base import Command
from common.contracts.commands import (
    CreateCustomer,
    CreateTransfer,
    CreateVirtualAccount,
    CreateWallet,
    Reconcile,
    ReviewTransfer,
    SandboxDeposit,
    SettleTransfer,
    VerifyJournal,
)
from common.metrics import AUTHORITY_REFUSED

DECIDED_BY: dict[type, Signer] = {
    CreateCustomer: "compliance",
    CreateWallet: "compliance",
    CreateVirtualAccount: "compliance",
    SandboxDeposit: "compliance",
    CreateTransfer: "compliance",
    ReviewTransfer: "admin",
    SettleTransfer: "admin",
    Reconcile: "admin",
    VerifyJournal: "admin",
}


def required(cmd: Envelope) -> Collection[str]:
    """Whose signature ``cmd`` needs (a type nobody may give here: a signer that never signs)."""
    return (DECIDED_BY.get(type(cmd), "nobody"),)


def admission(keys: VerifyKeys) -> Callable[[Envelope], None]:
    """The ledger's check of every command on its commands topic (``BatchProcessor.admit``)."""
    verify = authority.admit("ledger", keys, required)

    def check(cmd: Envelope) -> None:
        verify(cmd)
        if DECIDED_BY[type(cmd)] == "compliance" and (not isinstance(cmd, Command) or cmd.decision is None):
            AUTHORITY_REFUSED.labels("ledger", "no_decision").inc()
            raise AuthorityInvalid("no_decision", f"{type(cmd).__name__} carries no compliance decision")

    return check

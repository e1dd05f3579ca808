"""ledger.core.parties: the wallets a transfer names and its route, from the batch's wallets in memory
(under mutation). Every refusal is compared whole: code, field and message
are what a partner reads. Against real stores (the in-process tier):
tests/inprocess/test_withdrawals.py, test_ledger_money.py."""

from __future__ import annotations

from typing import Any

import pytest

from common.contracts.base import Ctx
from common.contracts.commands import CreateTransfer, Party
from common.errors import ServiceError
from ledger.core.parties import (
    PAYOUT_RAILS,
    WalletIndex,
    is_withdrawal,
    payout_destination,
    source,
    transfer_destination,
    withdrawal_destination,
)
from ledger.models import Wallet

pytestmark = pytest.mark.unit

A = "0x" + "a" * 40
B = "0x" + "b" * 40


def wallet(
    wid: str, customer: str = "cus_1", *, symbol: str = "USDC", chain: str = "BASE", **over: Any
) -> Wallet:
    fields: dict[str, Any] = {
        "id": wid,
        "tenant_id": "ten_1",
        "mode": "sandbox",
        "customer_id": customer,
        "symbol": symbol,
        "chain": chain,
        "deposit_address": f"addr_{wid}",
        **over,
    }
    return Wallet(**fields)


def cmd(
    source: dict[str, Any], destination: dict[str, Any], *, kind: str = "transfer", **over: Any
) -> CreateTransfer:
    fields: dict[str, Any] = {
        "command_id": "cmd_1",
        "ctx": Ctx(request_id="req_1", tenant_id="ten_1", mode="sandbox"),
        "transfer_id": "tr_1",
        "kind": kind,
        "source": Party(**source),
        "destination": Party(**destination),
        "amount": "10",
        "currency": "USDC",
        "idempotency_key": "k" * 16,
        **over,
    }
    return CreateTransfer(**fields)


def refusal(fn: Any, *args: Any) -> tuple[str, dict[str, Any], str]:
    with pytest.raises(ServiceError) as info:
        fn(*args)
    return str(info.value.code), info.value.details, info.value.message


WAL = {"payment_rail": "provider_wallet", "currency": "USDC", "provider_wallet_id": "wal_1"}
TO_WAL = {"payment_rail": "provider_wallet", "currency": "USDC", "provider_wallet_id": "wal_2"}
CHAIN_SRC = {"payment_rail": "stablecoin", "currency": "usdc", "chain": "base", "customer_id": "cus_1"}


def index(*wallets: Wallet) -> WalletIndex:
    return WalletIndex(list(wallets))


def test_a_provider_wallet_source_is_its_wallet_of_this_tenant_and_mode() -> None:
    w1 = wallet("wal_1")
    assert source(index(w1, wallet("wal_2")), cmd(WAL, TO_WAL)) is w1
    for other in (wallet("wal_1", tenant_id="ten_2"), wallet("wal_1", mode="production")):
        assert refusal(source, index(other), cmd(WAL, TO_WAL)) == (
            "not_found",
            {"field": "source.provider_wallet_id"},
            "wallet not found",
        )
    assert refusal(source, index(w1), cmd({**WAL, "provider_wallet_id": None}, TO_WAL)) == (
        "invalid_request",
        {"field": "source.provider_wallet_id"},
        "a provider_wallet source needs provider_wallet_id",
    )
    upper = cmd({**WAL, "payment_rail": "PROVIDER_WALLET"}, TO_WAL)
    assert source(index(w1), upper) is w1


def test_a_source_in_another_currency_is_refused() -> None:
    assert refusal(source, index(wallet("wal_1", symbol="EURC")), cmd(WAL, TO_WAL)) == (
        "invalid_request",
        {"field": "source.currency"},
        "source currency must be the wallet's symbol EURC",
    )


def test_an_onchain_source_is_the_customers_one_wallet_on_the_chain() -> None:
    mine = wallet("wal_1")
    others = (
        wallet("wal_2", "cus_2"),
        wallet("wal_3", symbol="EURC"),
        wallet("wal_4", chain="ETH"),
        wallet("wal_5", tenant_id="ten_2"),
    )
    assert source(index(mine, *others), cmd(CHAIN_SRC, TO_WAL)) is mine
    for field in ("customer_id", "chain"):
        assert refusal(source, index(mine), cmd({**CHAIN_SRC, field: None}, TO_WAL)) == (
            "invalid_request",
            {"field": f"source.{field}"},
            f"an on-chain source needs {field}",
        )
    assert refusal(source, index(*others), cmd(CHAIN_SRC, TO_WAL)) == (
        "not_found",
        {"field": "source.customer_id"},
        "source wallet not found",
    )
    assert refusal(source, index(), cmd(CHAIN_SRC, TO_WAL)) == (  # a customer with no wallet at all
        "not_found",
        {"field": "source.customer_id"},
        "source wallet not found",
    )


def test_a_customer_with_several_wallets_names_one() -> None:
    w1, w2 = wallet("wal_1"), wallet("wal_2")
    idx = index(w1, w2)
    assert refusal(source, idx, cmd(CHAIN_SRC, TO_WAL)) == (
        "invalid_request",
        {"field": "source.from_address"},
        "the customer has several wallets on this chain in this currency: name one with from_address"
        " or provider_wallet_id",
    )
    assert source(idx, cmd({**CHAIN_SRC, "provider_wallet_id": "wal_2"}, TO_WAL)) is w2
    assert source(idx, cmd({**CHAIN_SRC, "from_address": "addr_wal_2"}, TO_WAL)) is w2
    # the wallet id wins over the address
    both = {**CHAIN_SRC, "provider_wallet_id": "wal_1", "from_address": "addr_wal_2"}
    assert source(idx, cmd(both, TO_WAL)) is w1
    for named in ({"provider_wallet_id": "wal_9"}, {"from_address": "addr_wal_9"}):
        assert refusal(source, idx, cmd({**CHAIN_SRC, **named}, TO_WAL))[0] == "not_found"


def test_the_customers_wallets_are_kept_in_the_order_given() -> None:
    w1, w2 = wallet("wal_1"), wallet("wal_2")
    idx = index(w1, w2)
    assert idx.by_customer["cus_1"] == [w1, w2]
    assert source(idx, cmd({**CHAIN_SRC, "from_address": "addr_wal_1"}, TO_WAL)) is w1


def test_other_source_rails_are_refused_by_kind() -> None:
    w1 = wallet("wal_1")
    assert refusal(source, index(w1), cmd(CHAIN_SRC, TO_WAL, kind="payout")) == (
        "invalid_request",
        {"field": "source.payment_rail"},
        "source payment_rail must be provider_wallet",
    )
    assert refusal(source, index(w1), cmd({**CHAIN_SRC, "payment_rail": "ach"}, TO_WAL)) == (
        "invalid_request",
        {"field": "source.payment_rail"},
        "source payment_rail must be provider_wallet or stablecoin",
    )
    upper = cmd({**CHAIN_SRC, "payment_rail": "STABLECOIN"}, TO_WAL)
    assert source(index(w1), upper) is w1


def test_a_book_transfer_names_the_destination_wallet() -> None:
    w1, w2 = wallet("wal_1"), wallet("wal_2", "cus_2", chain="ETH")
    # book: both provider wallets, any chains
    assert transfer_destination(index(w1, w2), cmd(WAL, TO_WAL), w1) == (w2, "book")
    upper = cmd({**WAL, "payment_rail": "Provider_Wallet"}, {**TO_WAL, "payment_rail": "PROVIDER_WALLET"})
    assert transfer_destination(index(w1, w2), upper, w1) == (w2, "book")
    assert refusal(transfer_destination, index(w1, wallet("wal_2", tenant_id="x")), cmd(WAL, TO_WAL), w1) == (
        "not_found",
        {"field": "destination.provider_wallet_id"},
        "wallet not found",
    )
    assert refusal(
        transfer_destination, index(w1), cmd(WAL, {**TO_WAL, "provider_wallet_id": "wal_1"}), w1
    ) == (
        "invalid_request",
        {"field": "destination"},
        "source and destination must be different wallets",
    )


def test_a_destination_by_address_is_a_wallet_the_tenant_owns() -> None:
    w1, w2 = wallet("wal_1"), wallet("wal_2", "cus_2")
    to = {"payment_rail": "stablecoin", "currency": "USDC", "address": "addr_wal_2"}
    assert transfer_destination(index(w1, w2), cmd(CHAIN_SRC, to), w1) == (w2, "onchain")
    # a provider wallet named by address, from a provider wallet: book
    by_address = {**to, "payment_rail": "provider_wallet"}
    assert transfer_destination(index(w1, w2), cmd(WAL, by_address), w1) == (w2, "book")
    # from an on-chain source to a provider wallet: on-chain, same chain needed
    assert transfer_destination(index(w1, w2), cmd(CHAIN_SRC, TO_WAL), w1) == (w2, "onchain")
    for idx in (index(w1), index(w1, wallet("wal_2", mode="production"))):
        assert refusal(transfer_destination, idx, cmd(CHAIN_SRC, to), w1) == (
            "not_found",
            {"field": "destination.address"},
            "destination wallet not found",
        )
    for rail in ("stablecoin", "provider_wallet"):
        bare = {"payment_rail": rail, "currency": "USDC"}
        assert refusal(transfer_destination, index(w1, w2), cmd(CHAIN_SRC, bare), w1) == (
            "invalid_request",
            {"field": "destination.address"},
            "the destination needs provider_wallet_id or address",
        )
    assert refusal(
        transfer_destination, index(w1, w2), cmd(CHAIN_SRC, {**to, "payment_rail": "ach"}), w1
    ) == (
        "invalid_request",
        {"field": "destination.payment_rail"},
        "destination payment_rail must be provider_wallet or stablecoin",
    )


def test_the_destination_currency_must_match() -> None:
    w1 = wallet("wal_1")
    to = {"payment_rail": "stablecoin", "currency": "usdc", "address": "addr_wal_2"}
    assert transfer_destination(index(w1, wallet("wal_2")), cmd(CHAIN_SRC, to), w1)[1] == "onchain"
    wrong = (
        (wallet("wal_2", symbol="EURC"), to),
        (wallet("wal_2"), {**to, "currency": "EURC"}),
    )
    for w2, dest in wrong:
        assert refusal(transfer_destination, index(w1, w2), cmd(CHAIN_SRC, dest), w1) == (
            "invalid_request",
            {"field": "destination.currency"},
            "source and destination currency must match",
        )


def test_an_onchain_transfer_stays_on_the_source_chain() -> None:
    w1 = wallet("wal_1")
    to = {"payment_rail": "stablecoin", "currency": "USDC", "address": "addr_wal_2"}
    refused = (
        "invalid_request",
        {"field": "destination.chain"},
        "an on-chain transfer stays on the source wallet's chain",
    )
    assert (
        refusal(transfer_destination, index(w1, wallet("wal_2", chain="ETH")), cmd(CHAIN_SRC, to), w1)
        == refused
    )
    w2 = wallet("wal_2")
    assert refusal(transfer_destination, index(w1, w2), cmd(CHAIN_SRC, {**to, "chain": "ETH"}), w1) == refused
    assert transfer_destination(index(w1, w2), cmd(CHAIN_SRC, {**to, "chain": "base"}), w1) == (w2, "onchain")
    # a book transfer does not read the chain
    book = cmd(WAL, {**TO_WAL, "chain": "ETH"})
    assert transfer_destination(index(w1, wallet("wal_2", chain="SOL")), book, w1)[1] == "book"


def test_a_payout_pays_the_rails_currency_from_a_pegged_coin() -> None:
    usdc, eurc = wallet("wal_1"), wallet("wal_1", symbol="EURC")
    ach = {"payment_rail": "ACH", "currency": "usd", "external_account_id": "ext_1"}
    assert payout_destination(cmd(WAL, ach, kind="payout"), usdc) is None
    sepa = {"payment_rail": "sepa", "currency": "EUR", "external_account_id": "ext_1"}
    assert payout_destination(cmd(WAL, sepa, kind="payout"), eurc) is None
    assert refusal(payout_destination, cmd(WAL, {**ach, "payment_rail": "swift"}, kind="payout"), usdc) == (
        "invalid_request",
        {"field": "destination.payment_rail"},
        "payout rail must be one of ach, wire, sepa, faster_payments",
    )
    assert refusal(payout_destination, cmd(WAL, {**ach, "currency": "EUR"}, kind="payout"), usdc) == (
        "invalid_request",
        {"field": "destination.currency"},
        "ach pays USD",
    )
    assert refusal(payout_destination, cmd(WAL, sepa, kind="payout"), usdc) == (
        "invalid_request",
        {"field": "destination.currency"},
        "USDC cannot be paid out in EUR",
    )
    gbp = {"payment_rail": "faster_payments", "currency": "GBP", "external_account_id": "ext_1"}
    assert (
        refusal(payout_destination, cmd(WAL, gbp, kind="payout"), usdc)[2] == "USDC cannot be paid out in GBP"
    )
    assert refusal(
        payout_destination, cmd(WAL, {**ach, "external_account_id": None}, kind="payout"), usdc
    ) == (
        "invalid_request",
        {"field": "destination.external_account_id"},
        "a payout needs an approved external_account_id",
    )
    assert PAYOUT_RAILS == {"ach": "USD", "wire": "USD", "sepa": "EUR", "faster_payments": "GBP"}


OUT = {"payment_rail": "stablecoin", "currency": "USDC", "address": A}


def test_a_stablecoin_destination_no_wallet_of_the_tenant_holds_is_a_withdrawal() -> None:
    """The money leaves the suite only when the address is nobody's here: an address a wallet
    of this tenant and mode holds is an on-chain transfer between its own wallets."""
    mine = wallet("wal_2", deposit_address=A)
    assert is_withdrawal(index(wallet("wal_1")), cmd(CHAIN_SRC, OUT)) is True
    assert (
        is_withdrawal(index(wallet("wal_1")), cmd(CHAIN_SRC, {**OUT, "payment_rail": "STABLECOIN"})) is True
    )
    assert is_withdrawal(index(wallet("wal_1"), mine), cmd(CHAIN_SRC, OUT)) is False
    # another tenant's or mode's wallet at that address does not keep the money in the suite
    for theirs in (
        wallet("wal_2", deposit_address=A, tenant_id="ten_2"),
        wallet("wal_2", deposit_address=A, mode="production"),
    ):
        assert is_withdrawal(index(theirs), cmd(CHAIN_SRC, OUT)) is True


def test_only_a_stablecoin_destination_with_an_address_can_be_a_withdrawal() -> None:
    """A provider wallet named by an unknown address is a missing wallet (refused by
    transfer_destination), never a withdrawal; no address names nothing to withdraw to."""
    idx = index(wallet("wal_1"))
    assert is_withdrawal(idx, cmd(CHAIN_SRC, {**OUT, "payment_rail": "provider_wallet"})) is False
    assert is_withdrawal(idx, cmd(CHAIN_SRC, {**OUT, "payment_rail": "ach"})) is False
    assert is_withdrawal(idx, cmd(CHAIN_SRC, {**OUT, "address": None})) is False
    assert is_withdrawal(idx, cmd(CHAIN_SRC, {**OUT, "address": ""})) is False


def test_a_withdrawal_goes_to_an_address_of_the_source_wallets_chain() -> None:
    """Chain and currency may be omitted or in any case; the address is read on the source
    wallet's chain."""
    src = wallet("wal_1")
    for dest in (OUT, {**OUT, "chain": "base", "currency": "usdc"}, {**OUT, "chain": "BASE"}):
        assert withdrawal_destination(cmd(CHAIN_SRC, dest), src) is None
    assert refusal(withdrawal_destination, cmd(CHAIN_SRC, {**OUT, "chain": "eth"}), src) == (
        "invalid_request",
        {"field": "destination.chain"},
        "a withdrawal stays on the source wallet's chain",
    )
    assert refusal(withdrawal_destination, cmd(CHAIN_SRC, {**OUT, "currency": "USDT"}), src) == (
        "invalid_request",
        {"field": "destination.currency"},
        "source and destination currency must match",
    )


def test_a_withdrawal_address_that_is_none_on_the_source_chain_is_refused_naming_it() -> None:
    """The partner reads why the address is no address, and on which chain it was read."""
    assert refusal(withdrawal_destination, cmd(CHAIN_SRC, {**OUT, "address": "0x123"}), wallet("wal_1")) == (
        "invalid_request",
        {"field": "destination.address"},
        "an EVM address is 0x followed by 40 hexadecimal digits (BASE)",
    )
    sol = wallet("wal_1", chain="SOL")
    assert refusal(withdrawal_destination, cmd(CHAIN_SRC, OUT), sol) == (
        "invalid_request",
        {"field": "destination.address"},
        "a Solana address is the base58 encoding of 32 bytes (SOL)",
    )
    assert refusal(withdrawal_destination, cmd(CHAIN_SRC, {**OUT, "address": None}), wallet("wal_1"))[1:] == (
        {"field": "destination.address"},
        "an EVM address is 0x followed by 40 hexadecimal digits (BASE)",
    )


def test_a_withdrawal_refuses_the_chain_first_then_the_currency_then_the_address() -> None:
    """One refusal per command: the first rule broken, in the order the partner fixes them."""
    src = wallet("wal_1")
    wrong = {**OUT, "chain": "ETH", "currency": "USDT", "address": "nope"}
    assert refusal(withdrawal_destination, cmd(CHAIN_SRC, wrong), src)[1] == {"field": "destination.chain"}
    wrong = {**wrong, "chain": None}
    assert refusal(withdrawal_destination, cmd(CHAIN_SRC, wrong), src)[1] == {"field": "destination.currency"}

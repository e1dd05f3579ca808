from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..models.party_in_payment_rail import PartyInPaymentRail
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.bank_account_in import BankAccountIn


T = TypeVar("T", bound="PartyIn")


@_attrs_define
class PartyIn:
    """
    Attributes:
        payment_rail (PartyInPaymentRail):
        currency (str): currency, case-insensitive: USDC, USDT, PYUSD, USDB, EURC, USD, EUR, GBP
        chain (None | str | Unset):
        amount (None | str | Unset):
        customer_id (None | str | Unset):
        from_address (None | str | Unset):
        address (None | str | Unset):
        provider_wallet_id (None | str | Unset):
        external_account_id (None | str | Unset):
        deposit_id (None | str | Unset):
        bank_account (BankAccountIn | None | Unset):
    """

    payment_rail: PartyInPaymentRail
    currency: str
    chain: None | str | Unset = UNSET
    amount: None | str | Unset = UNSET
    customer_id: None | str | Unset = UNSET
    from_address: None | str | Unset = UNSET
    address: None | str | Unset = UNSET
    provider_wallet_id: None | str | Unset = UNSET
    external_account_id: None | str | Unset = UNSET
    deposit_id: None | str | Unset = UNSET
    bank_account: BankAccountIn | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.bank_account_in import BankAccountIn  # noqa: PLC0415

        payment_rail = self.payment_rail.value

        currency = self.currency

        chain: None | str | Unset
        if isinstance(self.chain, Unset):
            chain = UNSET
        else:
            chain = self.chain

        amount: None | str | Unset
        if isinstance(self.amount, Unset):
            amount = UNSET
        else:
            amount = self.amount

        customer_id: None | str | Unset
        if isinstance(self.customer_id, Unset):
            customer_id = UNSET
        else:
            customer_id = self.customer_id

        from_address: None | str | Unset
        if isinstance(self.from_address, Unset):
            from_address = UNSET
        else:
            from_address = self.from_address

        address: None | str | Unset
        if isinstance(self.address, Unset):
            address = UNSET
        else:
            address = self.address

        provider_wallet_id: None | str | Unset
        if isinstance(self.provider_wallet_id, Unset):
            provider_wallet_id = UNSET
        else:
            provider_wallet_id = self.provider_wallet_id

        external_account_id: None | str | Unset
        if isinstance(self.external_account_id, Unset):
            external_account_id = UNSET
        else:
            external_account_id = self.external_account_id

        deposit_id: None | str | Unset
        if isinstance(self.deposit_id, Unset):
            deposit_id = UNSET
        else:
            deposit_id = self.deposit_id

        bank_account: dict[str, Any] | None | Unset
        if isinstance(self.bank_account, Unset):
            bank_account = UNSET
        elif isinstance(self.bank_account, BankAccountIn):
            bank_account = self.bank_account.to_dict()
        else:
            bank_account = self.bank_account

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "payment_rail": payment_rail,
                "currency": currency,
            }
        )
        if chain is not UNSET:
            field_dict["chain"] = chain
        if amount is not UNSET:
            field_dict["amount"] = amount
        if customer_id is not UNSET:
            field_dict["customer_id"] = customer_id
        if from_address is not UNSET:
            field_dict["from_address"] = from_address
        if address is not UNSET:
            field_dict["address"] = address
        if provider_wallet_id is not UNSET:
            field_dict["provider_wallet_id"] = provider_wallet_id
        if external_account_id is not UNSET:
            field_dict["external_account_id"] = external_account_id
        if deposit_id is not UNSET:
            field_dict["deposit_id"] = deposit_id
        if bank_account is not UNSET:
            field_dict["bank_account"] = bank_account

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.bank_account_in import BankAccountIn  # noqa: PLC0415

        d = dict(src_dict)
        payment_rail = PartyInPaymentRail(d.pop("payment_rail"))

        currency = d.pop("currency")

        def _parse_chain(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        chain = _parse_chain(d.pop("chain", UNSET))

        def _parse_amount(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        amount = _parse_amount(d.pop("amount", UNSET))

        def _parse_customer_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        customer_id = _parse_customer_id(d.pop("customer_id", UNSET))

        def _parse_from_address(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        from_address = _parse_from_address(d.pop("from_address", UNSET))

        def _parse_address(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        address = _parse_address(d.pop("address", UNSET))

        def _parse_provider_wallet_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        provider_wallet_id = _parse_provider_wallet_id(d.pop("provider_wallet_id", UNSET))

        def _parse_external_account_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        external_account_id = _parse_external_account_id(d.pop("external_account_id", UNSET))

        def _parse_deposit_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        deposit_id = _parse_deposit_id(d.pop("deposit_id", UNSET))

        def _parse_bank_account(data: object) -> BankAccountIn | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                bank_account_type_0 = BankAccountIn.from_dict(data)

                return bank_account_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(BankAccountIn | None | Unset, data)

        bank_account = _parse_bank_account(d.pop("bank_account", UNSET))

        party_in = cls(
            payment_rail=payment_rail,
            currency=currency,
            chain=chain,
            amount=amount,
            customer_id=customer_id,
            from_address=from_address,
            address=address,
            provider_wallet_id=provider_wallet_id,
            external_account_id=external_account_id,
            deposit_id=deposit_id,
            bank_account=bank_account,
        )

        return party_in

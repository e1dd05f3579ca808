from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.transfer_bank_account import TransferBankAccount


T = TypeVar("T", bound="TransferParty")


@_attrs_define
class TransferParty:
    """A transfer's source or destination as it was requested (codes upper-case); a field the
    request left out is absent.

    Attributes:
        payment_rail (str):
        currency (str):
        chain (str | Unset):
        amount (str | Unset): a decimal string in the currency's units
        customer_id (str | Unset):
        from_address (str | Unset):
        address (str | Unset):
        provider_wallet_id (str | Unset):
        external_account_id (str | Unset):
        deposit_id (str | Unset):
        bank_account (TransferBankAccount | Unset):
    """

    payment_rail: str
    currency: str
    chain: str | Unset = UNSET
    amount: str | Unset = UNSET
    customer_id: str | Unset = UNSET
    from_address: str | Unset = UNSET
    address: str | Unset = UNSET
    provider_wallet_id: str | Unset = UNSET
    external_account_id: str | Unset = UNSET
    deposit_id: str | Unset = UNSET
    bank_account: TransferBankAccount | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        payment_rail = self.payment_rail

        currency = self.currency

        chain = self.chain

        amount = self.amount

        customer_id = self.customer_id

        from_address = self.from_address

        address = self.address

        provider_wallet_id = self.provider_wallet_id

        external_account_id = self.external_account_id

        deposit_id = self.deposit_id

        bank_account: dict[str, Any] | Unset = UNSET
        if not isinstance(self.bank_account, Unset):
            bank_account = self.bank_account.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
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
        from ..models.transfer_bank_account import TransferBankAccount  # noqa: PLC0415

        d = dict(src_dict)
        payment_rail = d.pop("payment_rail")

        currency = d.pop("currency")

        chain = d.pop("chain", UNSET)

        amount = d.pop("amount", UNSET)

        customer_id = d.pop("customer_id", UNSET)

        from_address = d.pop("from_address", UNSET)

        address = d.pop("address", UNSET)

        provider_wallet_id = d.pop("provider_wallet_id", UNSET)

        external_account_id = d.pop("external_account_id", UNSET)

        deposit_id = d.pop("deposit_id", UNSET)

        _bank_account = d.pop("bank_account", UNSET)
        bank_account: TransferBankAccount | Unset
        if isinstance(_bank_account, Unset):
            bank_account = UNSET
        else:
            bank_account = TransferBankAccount.from_dict(_bank_account)

        transfer_party = cls(
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

        transfer_party.additional_properties = d
        return transfer_party

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties

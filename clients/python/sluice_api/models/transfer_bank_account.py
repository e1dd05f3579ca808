from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="TransferBankAccount")


@_attrs_define
class TransferBankAccount:
    """
    Attributes:
        account_number (str | Unset):
        routing_number (str | Unset):
        iban (str | Unset):
        bic (str | Unset):
    """

    account_number: str | Unset = UNSET
    routing_number: str | Unset = UNSET
    iban: str | Unset = UNSET
    bic: str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        account_number = self.account_number

        routing_number = self.routing_number

        iban = self.iban

        bic = self.bic

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if account_number is not UNSET:
            field_dict["account_number"] = account_number
        if routing_number is not UNSET:
            field_dict["routing_number"] = routing_number
        if iban is not UNSET:
            field_dict["iban"] = iban
        if bic is not UNSET:
            field_dict["bic"] = bic

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        account_number = d.pop("account_number", UNSET)

        routing_number = d.pop("routing_number", UNSET)

        iban = d.pop("iban", UNSET)

        bic = d.pop("bic", UNSET)

        transfer_bank_account = cls(
            account_number=account_number,
            routing_number=routing_number,
            iban=iban,
            bic=bic,
        )

        transfer_bank_account.additional_properties = d
        return transfer_bank_account

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

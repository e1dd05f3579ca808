from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="SandboxDepositReceived")


@_attrs_define
class SandboxDepositReceived:
    """
    Attributes:
        deposit_id (str):
        virtual_account_id (str | Unset):
        amount (str | Unset):
    """

    deposit_id: str
    virtual_account_id: str | Unset = UNSET
    amount: str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        deposit_id = self.deposit_id

        virtual_account_id = self.virtual_account_id

        amount = self.amount

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "deposit_id": deposit_id,
            }
        )
        if virtual_account_id is not UNSET:
            field_dict["virtual_account_id"] = virtual_account_id
        if amount is not UNSET:
            field_dict["amount"] = amount

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        deposit_id = d.pop("deposit_id")

        virtual_account_id = d.pop("virtual_account_id", UNSET)

        amount = d.pop("amount", UNSET)

        sandbox_deposit_received = cls(
            deposit_id=deposit_id,
            virtual_account_id=virtual_account_id,
            amount=amount,
        )

        sandbox_deposit_received.additional_properties = d
        return sandbox_deposit_received

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

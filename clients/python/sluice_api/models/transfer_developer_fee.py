from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="TransferDeveloperFee")


@_attrs_define
class TransferDeveloperFee:
    """The developer fee as requested; the percentage as a decimal string.

    Attributes:
        percentage (str | Unset):
        flat_amount (str | Unset): a decimal string in the currency's units
    """

    percentage: str | Unset = UNSET
    flat_amount: str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        percentage = self.percentage

        flat_amount = self.flat_amount

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if percentage is not UNSET:
            field_dict["percentage"] = percentage
        if flat_amount is not UNSET:
            field_dict["flat_amount"] = flat_amount

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        percentage = d.pop("percentage", UNSET)

        flat_amount = d.pop("flat_amount", UNSET)

        transfer_developer_fee = cls(
            percentage=percentage,
            flat_amount=flat_amount,
        )

        transfer_developer_fee.additional_properties = d
        return transfer_developer_fee

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

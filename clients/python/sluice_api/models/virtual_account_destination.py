from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.virtual_account_destination_rail import VirtualAccountDestinationRail

T = TypeVar("T", bound="VirtualAccountDestination")


@_attrs_define
class VirtualAccountDestination:
    """The wallet deposits convert into.

    Attributes:
        rail (VirtualAccountDestinationRail):
        currency (str):
        address (str):
        provider_wallet_id (str):
    """

    rail: VirtualAccountDestinationRail
    currency: str
    address: str
    provider_wallet_id: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        rail = self.rail.value

        currency = self.currency

        address = self.address

        provider_wallet_id = self.provider_wallet_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "rail": rail,
                "currency": currency,
                "address": address,
                "provider_wallet_id": provider_wallet_id,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        rail = VirtualAccountDestinationRail(d.pop("rail"))

        currency = d.pop("currency")

        address = d.pop("address")

        provider_wallet_id = d.pop("provider_wallet_id")

        virtual_account_destination = cls(
            rail=rail,
            currency=currency,
            address=address,
            provider_wallet_id=provider_wallet_id,
        )

        virtual_account_destination.additional_properties = d
        return virtual_account_destination

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

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.transfer_created_provider import TransferCreatedProvider

T = TypeVar("T", bound="TransferCreated")


@_attrs_define
class TransferCreated:
    """
    Attributes:
        transfer_id (str):
        state (str):
        provider (TransferCreatedProvider):
    """

    transfer_id: str
    state: str
    provider: TransferCreatedProvider
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        transfer_id = self.transfer_id

        state = self.state

        provider = self.provider.value

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "transfer_id": transfer_id,
                "state": state,
                "provider": provider,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        transfer_id = d.pop("transfer_id")

        state = d.pop("state")

        provider = TransferCreatedProvider(d.pop("provider"))

        transfer_created = cls(
            transfer_id=transfer_id,
            state=state,
            provider=provider,
        )

        transfer_created.additional_properties = d
        return transfer_created

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

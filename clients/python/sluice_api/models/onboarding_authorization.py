from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="OnboardingAuthorization")


@_attrs_define
class OnboardingAuthorization:
    """
    Attributes:
        authorization_id (str):
        url (str):
        expires_at (str):
    """

    authorization_id: str
    url: str
    expires_at: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        authorization_id = self.authorization_id

        url = self.url

        expires_at = self.expires_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "authorization_id": authorization_id,
                "url": url,
                "expires_at": expires_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        authorization_id = d.pop("authorization_id")

        url = d.pop("url")

        expires_at = d.pop("expires_at")

        onboarding_authorization = cls(
            authorization_id=authorization_id,
            url=url,
            expires_at=expires_at,
        )

        onboarding_authorization.additional_properties = d
        return onboarding_authorization

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

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.customer_account_type import CustomerAccountType
from ..types import UNSET, Unset

T = TypeVar("T", bound="Customer")


@_attrs_define
class Customer:
    """
    Attributes:
        customer_id (str):
        account_type (CustomerAccountType):
        service_user_id (str):
        provider (str | Unset):
        email (str | Unset):
        country_code (str | Unset):
        full_name (None | str | Unset):
        company_name (None | str | Unset):
        registration_number (None | str | Unset):
        phone_e164 (None | str | Unset):
        created_at (str | Unset):
    """

    customer_id: str
    account_type: CustomerAccountType
    service_user_id: str
    provider: str | Unset = UNSET
    email: str | Unset = UNSET
    country_code: str | Unset = UNSET
    full_name: None | str | Unset = UNSET
    company_name: None | str | Unset = UNSET
    registration_number: None | str | Unset = UNSET
    phone_e164: None | str | Unset = UNSET
    created_at: str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        customer_id = self.customer_id

        account_type = self.account_type.value

        service_user_id = self.service_user_id

        provider = self.provider

        email = self.email

        country_code = self.country_code

        full_name: None | str | Unset
        if isinstance(self.full_name, Unset):
            full_name = UNSET
        else:
            full_name = self.full_name

        company_name: None | str | Unset
        if isinstance(self.company_name, Unset):
            company_name = UNSET
        else:
            company_name = self.company_name

        registration_number: None | str | Unset
        if isinstance(self.registration_number, Unset):
            registration_number = UNSET
        else:
            registration_number = self.registration_number

        phone_e164: None | str | Unset
        if isinstance(self.phone_e164, Unset):
            phone_e164 = UNSET
        else:
            phone_e164 = self.phone_e164

        created_at = self.created_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "customer_id": customer_id,
                "account_type": account_type,
                "service_user_id": service_user_id,
            }
        )
        if provider is not UNSET:
            field_dict["provider"] = provider
        if email is not UNSET:
            field_dict["email"] = email
        if country_code is not UNSET:
            field_dict["country_code"] = country_code
        if full_name is not UNSET:
            field_dict["full_name"] = full_name
        if company_name is not UNSET:
            field_dict["company_name"] = company_name
        if registration_number is not UNSET:
            field_dict["registration_number"] = registration_number
        if phone_e164 is not UNSET:
            field_dict["phone_e164"] = phone_e164
        if created_at is not UNSET:
            field_dict["created_at"] = created_at

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        customer_id = d.pop("customer_id")

        account_type = CustomerAccountType(d.pop("account_type"))

        service_user_id = d.pop("service_user_id")

        provider = d.pop("provider", UNSET)

        email = d.pop("email", UNSET)

        country_code = d.pop("country_code", UNSET)

        def _parse_full_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        full_name = _parse_full_name(d.pop("full_name", UNSET))

        def _parse_company_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        company_name = _parse_company_name(d.pop("company_name", UNSET))

        def _parse_registration_number(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        registration_number = _parse_registration_number(d.pop("registration_number", UNSET))

        def _parse_phone_e164(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        phone_e164 = _parse_phone_e164(d.pop("phone_e164", UNSET))

        created_at = d.pop("created_at", UNSET)

        customer = cls(
            customer_id=customer_id,
            account_type=account_type,
            service_user_id=service_user_id,
            provider=provider,
            email=email,
            country_code=country_code,
            full_name=full_name,
            company_name=company_name,
            registration_number=registration_number,
            phone_e164=phone_e164,
            created_at=created_at,
        )

        customer.additional_properties = d
        return customer

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

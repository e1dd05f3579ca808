from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.customer_account_type import CustomerAccountType
from ..models.customer_provider import CustomerProvider

T = TypeVar("T", bound="Customer")


@_attrs_define
class Customer:
    """
    Attributes:
        customer_id (str):
        provider (CustomerProvider):
        account_type (CustomerAccountType):
        email (str):
        country_code (str):
        service_user_id (str):
        full_name (None | str):
        company_name (None | str):
        registration_number (None | str):
        phone_e164 (None | str):
        created_at (str): RFC 3339, UTC
    """

    customer_id: str
    provider: CustomerProvider
    account_type: CustomerAccountType
    email: str
    country_code: str
    service_user_id: str
    full_name: None | str
    company_name: None | str
    registration_number: None | str
    phone_e164: None | str
    created_at: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        customer_id = self.customer_id

        provider = self.provider.value

        account_type = self.account_type.value

        email = self.email

        country_code = self.country_code

        service_user_id = self.service_user_id

        full_name: None | str
        full_name = self.full_name

        company_name: None | str
        company_name = self.company_name

        registration_number: None | str
        registration_number = self.registration_number

        phone_e164: None | str
        phone_e164 = self.phone_e164

        created_at = self.created_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "customer_id": customer_id,
                "provider": provider,
                "account_type": account_type,
                "email": email,
                "country_code": country_code,
                "service_user_id": service_user_id,
                "full_name": full_name,
                "company_name": company_name,
                "registration_number": registration_number,
                "phone_e164": phone_e164,
                "created_at": created_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        customer_id = d.pop("customer_id")

        provider = CustomerProvider(d.pop("provider"))

        account_type = CustomerAccountType(d.pop("account_type"))

        email = d.pop("email")

        country_code = d.pop("country_code")

        service_user_id = d.pop("service_user_id")

        def _parse_full_name(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        full_name = _parse_full_name(d.pop("full_name"))

        def _parse_company_name(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        company_name = _parse_company_name(d.pop("company_name"))

        def _parse_registration_number(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        registration_number = _parse_registration_number(d.pop("registration_number"))

        def _parse_phone_e164(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        phone_e164 = _parse_phone_e164(d.pop("phone_e164"))

        created_at = d.pop("created_at")

        customer = cls(
            customer_id=customer_id,
            provider=provider,
            account_type=account_type,
            email=email,
            country_code=country_code,
            service_user_id=service_user_id,
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

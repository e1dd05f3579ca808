from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..models.business_customer_create_account_type import BusinessCustomerCreateAccountType
from ..types import UNSET, Unset

T = TypeVar("T", bound="BusinessCustomerCreate")


@_attrs_define
class BusinessCustomerCreate:
    """A business: ``company_name`` is required.

    Attributes:
        account_type (BusinessCustomerCreateAccountType):
        email (str):
        country_code (str):
        service_user_id (str):
        company_name (str):
        registration_number (None | str | Unset):
        phone_e164 (None | str | Unset):
        full_name (None | str | Unset):
    """

    account_type: BusinessCustomerCreateAccountType
    email: str
    country_code: str
    service_user_id: str
    company_name: str
    registration_number: None | str | Unset = UNSET
    phone_e164: None | str | Unset = UNSET
    full_name: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        account_type = self.account_type.value

        email = self.email

        country_code = self.country_code

        service_user_id = self.service_user_id

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

        full_name: None | str | Unset
        if isinstance(self.full_name, Unset):
            full_name = UNSET
        else:
            full_name = self.full_name

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "account_type": account_type,
                "email": email,
                "country_code": country_code,
                "service_user_id": service_user_id,
                "company_name": company_name,
            }
        )
        if registration_number is not UNSET:
            field_dict["registration_number"] = registration_number
        if phone_e164 is not UNSET:
            field_dict["phone_e164"] = phone_e164
        if full_name is not UNSET:
            field_dict["full_name"] = full_name

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        account_type = BusinessCustomerCreateAccountType(d.pop("account_type"))

        email = d.pop("email")

        country_code = d.pop("country_code")

        service_user_id = d.pop("service_user_id")

        company_name = d.pop("company_name")

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

        def _parse_full_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        full_name = _parse_full_name(d.pop("full_name", UNSET))

        business_customer_create = cls(
            account_type=account_type,
            email=email,
            country_code=country_code,
            service_user_id=service_user_id,
            company_name=company_name,
            registration_number=registration_number,
            phone_e164=phone_e164,
            full_name=full_name,
        )

        return business_customer_create

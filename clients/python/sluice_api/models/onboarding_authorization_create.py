from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..models.onboarding_authorization_create_account_type_type_0 import (
    OnboardingAuthorizationCreateAccountTypeType0,
)
from ..types import UNSET, Unset

T = TypeVar("T", bound="OnboardingAuthorizationCreate")


@_attrs_define
class OnboardingAuthorizationCreate:
    """
    Attributes:
        service_user_id (str):
        email (None | str | Unset):
        account_type (None | OnboardingAuthorizationCreateAccountTypeType0 | Unset):
        redirect_url (None | str | Unset):
        expires_in_seconds (int | Unset):  Default: 900.
    """

    service_user_id: str
    email: None | str | Unset = UNSET
    account_type: None | OnboardingAuthorizationCreateAccountTypeType0 | Unset = UNSET
    redirect_url: None | str | Unset = UNSET
    expires_in_seconds: int | Unset = 900

    def to_dict(self) -> dict[str, Any]:
        service_user_id = self.service_user_id

        email: None | str | Unset
        if isinstance(self.email, Unset):
            email = UNSET
        else:
            email = self.email

        account_type: None | str | Unset
        if isinstance(self.account_type, Unset):
            account_type = UNSET
        elif isinstance(self.account_type, OnboardingAuthorizationCreateAccountTypeType0):
            account_type = self.account_type.value
        else:
            account_type = self.account_type

        redirect_url: None | str | Unset
        if isinstance(self.redirect_url, Unset):
            redirect_url = UNSET
        else:
            redirect_url = self.redirect_url

        expires_in_seconds = self.expires_in_seconds

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "service_user_id": service_user_id,
            }
        )
        if email is not UNSET:
            field_dict["email"] = email
        if account_type is not UNSET:
            field_dict["account_type"] = account_type
        if redirect_url is not UNSET:
            field_dict["redirect_url"] = redirect_url
        if expires_in_seconds is not UNSET:
            field_dict["expires_in_seconds"] = expires_in_seconds

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        service_user_id = d.pop("service_user_id")

        def _parse_email(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        email = _parse_email(d.pop("email", UNSET))

        def _parse_account_type(data: object) -> None | OnboardingAuthorizationCreateAccountTypeType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                account_type_type_0 = OnboardingAuthorizationCreateAccountTypeType0(data)

                return account_type_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | OnboardingAuthorizationCreateAccountTypeType0 | Unset, data)

        account_type = _parse_account_type(d.pop("account_type", UNSET))

        def _parse_redirect_url(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        redirect_url = _parse_redirect_url(d.pop("redirect_url", UNSET))

        expires_in_seconds = d.pop("expires_in_seconds", UNSET)

        onboarding_authorization_create = cls(
            service_user_id=service_user_id,
            email=email,
            account_type=account_type,
            redirect_url=redirect_url,
            expires_in_seconds=expires_in_seconds,
        )

        return onboarding_authorization_create

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="BankAccountIn")


@_attrs_define
class BankAccountIn:
    """
    Attributes:
        account_number (None | str | Unset):
        routing_number (None | str | Unset):
        iban (None | str | Unset):
        bic (None | str | Unset):
    """

    account_number: None | str | Unset = UNSET
    routing_number: None | str | Unset = UNSET
    iban: None | str | Unset = UNSET
    bic: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        account_number: None | str | Unset
        if isinstance(self.account_number, Unset):
            account_number = UNSET
        else:
            account_number = self.account_number

        routing_number: None | str | Unset
        if isinstance(self.routing_number, Unset):
            routing_number = UNSET
        else:
            routing_number = self.routing_number

        iban: None | str | Unset
        if isinstance(self.iban, Unset):
            iban = UNSET
        else:
            iban = self.iban

        bic: None | str | Unset
        if isinstance(self.bic, Unset):
            bic = UNSET
        else:
            bic = self.bic

        field_dict: dict[str, Any] = {}

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

        def _parse_account_number(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        account_number = _parse_account_number(d.pop("account_number", UNSET))

        def _parse_routing_number(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        routing_number = _parse_routing_number(d.pop("routing_number", UNSET))

        def _parse_iban(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        iban = _parse_iban(d.pop("iban", UNSET))

        def _parse_bic(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        bic = _parse_bic(d.pop("bic", UNSET))

        bank_account_in = cls(
            account_number=account_number,
            routing_number=routing_number,
            iban=iban,
            bic=bic,
        )

        return bank_account_in

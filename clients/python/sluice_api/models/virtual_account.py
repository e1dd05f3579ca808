from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.virtual_account_destination import VirtualAccountDestination


T = TypeVar("T", bound="VirtualAccount")


@_attrs_define
class VirtualAccount:
    """
    Attributes:
        virtual_account_id (str):
        customer_id (str):
        currency (str):
        account_number (None | str):
        routing_number (None | str):
        iban (None | str):
        bic (None | str):
        bank_name (None | str):
        destination (VirtualAccountDestination): The wallet deposits convert into.
        created_at (str): RFC 3339, UTC
    """

    virtual_account_id: str
    customer_id: str
    currency: str
    account_number: None | str
    routing_number: None | str
    iban: None | str
    bic: None | str
    bank_name: None | str
    destination: VirtualAccountDestination
    created_at: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        virtual_account_id = self.virtual_account_id

        customer_id = self.customer_id

        currency = self.currency

        account_number: None | str
        account_number = self.account_number

        routing_number: None | str
        routing_number = self.routing_number

        iban: None | str
        iban = self.iban

        bic: None | str
        bic = self.bic

        bank_name: None | str
        bank_name = self.bank_name

        destination = self.destination.to_dict()

        created_at = self.created_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "virtual_account_id": virtual_account_id,
                "customer_id": customer_id,
                "currency": currency,
                "account_number": account_number,
                "routing_number": routing_number,
                "iban": iban,
                "bic": bic,
                "bank_name": bank_name,
                "destination": destination,
                "created_at": created_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.virtual_account_destination import VirtualAccountDestination  # noqa: PLC0415

        d = dict(src_dict)
        virtual_account_id = d.pop("virtual_account_id")

        customer_id = d.pop("customer_id")

        currency = d.pop("currency")

        def _parse_account_number(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        account_number = _parse_account_number(d.pop("account_number"))

        def _parse_routing_number(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        routing_number = _parse_routing_number(d.pop("routing_number"))

        def _parse_iban(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        iban = _parse_iban(d.pop("iban"))

        def _parse_bic(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        bic = _parse_bic(d.pop("bic"))

        def _parse_bank_name(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        bank_name = _parse_bank_name(d.pop("bank_name"))

        destination = VirtualAccountDestination.from_dict(d.pop("destination"))

        created_at = d.pop("created_at")

        virtual_account = cls(
            virtual_account_id=virtual_account_id,
            customer_id=customer_id,
            currency=currency,
            account_number=account_number,
            routing_number=routing_number,
            iban=iban,
            bic=bic,
            bank_name=bank_name,
            destination=destination,
            created_at=created_at,
        )

        virtual_account.additional_properties = d
        return virtual_account

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

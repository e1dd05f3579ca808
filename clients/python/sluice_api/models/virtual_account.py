from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.virtual_account_destination import VirtualAccountDestination


T = TypeVar("T", bound="VirtualAccount")


@_attrs_define
class VirtualAccount:
    """
    Attributes:
        virtual_account_id (str):
        currency (str):
        account_number (None | str | Unset):
        routing_number (None | str | Unset):
        iban (None | str | Unset):
        bic (None | str | Unset):
        bank_name (None | str | Unset):
        customer_id (str | Unset):
        destination (VirtualAccountDestination | Unset):
        created_at (str | Unset):
    """

    virtual_account_id: str
    currency: str
    account_number: None | str | Unset = UNSET
    routing_number: None | str | Unset = UNSET
    iban: None | str | Unset = UNSET
    bic: None | str | Unset = UNSET
    bank_name: None | str | Unset = UNSET
    customer_id: str | Unset = UNSET
    destination: VirtualAccountDestination | Unset = UNSET
    created_at: str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        virtual_account_id = self.virtual_account_id

        currency = self.currency

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

        bank_name: None | str | Unset
        if isinstance(self.bank_name, Unset):
            bank_name = UNSET
        else:
            bank_name = self.bank_name

        customer_id = self.customer_id

        destination: dict[str, Any] | Unset = UNSET
        if not isinstance(self.destination, Unset):
            destination = self.destination.to_dict()

        created_at = self.created_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "virtual_account_id": virtual_account_id,
                "currency": currency,
            }
        )
        if account_number is not UNSET:
            field_dict["account_number"] = account_number
        if routing_number is not UNSET:
            field_dict["routing_number"] = routing_number
        if iban is not UNSET:
            field_dict["iban"] = iban
        if bic is not UNSET:
            field_dict["bic"] = bic
        if bank_name is not UNSET:
            field_dict["bank_name"] = bank_name
        if customer_id is not UNSET:
            field_dict["customer_id"] = customer_id
        if destination is not UNSET:
            field_dict["destination"] = destination
        if created_at is not UNSET:
            field_dict["created_at"] = created_at

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.virtual_account_destination import VirtualAccountDestination  # noqa: PLC0415

        d = dict(src_dict)
        virtual_account_id = d.pop("virtual_account_id")

        currency = d.pop("currency")

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

        def _parse_bank_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        bank_name = _parse_bank_name(d.pop("bank_name", UNSET))

        customer_id = d.pop("customer_id", UNSET)

        _destination = d.pop("destination", UNSET)
        destination: VirtualAccountDestination | Unset
        if isinstance(_destination, Unset):
            destination = UNSET
        else:
            destination = VirtualAccountDestination.from_dict(_destination)

        created_at = d.pop("created_at", UNSET)

        virtual_account = cls(
            virtual_account_id=virtual_account_id,
            currency=currency,
            account_number=account_number,
            routing_number=routing_number,
            iban=iban,
            bic=bic,
            bank_name=bank_name,
            customer_id=customer_id,
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

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

T = TypeVar("T", bound="VirtualAccountCreate")


@_attrs_define
class VirtualAccountCreate:
    """
    Attributes:
        customer_id (str):
        currency (str): fiat currency, case-insensitive: USD, EUR, GBP
        destination (Any): Either ``{rail, currency, address}`` or ``{payment_rail, currency, provider_wallet_id |
                address}``: a wallet of the same customer; ``currency`` is the wallet's symbol.
    """

    customer_id: str
    currency: str
    destination: Any

    def to_dict(self) -> dict[str, Any]:
        customer_id = self.customer_id

        currency = self.currency

        destination: Any
        destination = self.destination

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "customer_id": customer_id,
                "currency": currency,
                "destination": destination,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        customer_id = d.pop("customer_id")

        currency = d.pop("currency")

        def _parse_destination(data: object) -> Any:
            return cast(Any, data)

        destination = _parse_destination(d.pop("destination"))

        virtual_account_create = cls(
            customer_id=customer_id,
            currency=currency,
            destination=destination,
        )

        return virtual_account_create

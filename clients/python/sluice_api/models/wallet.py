from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="Wallet")


@_attrs_define
class Wallet:
    """
    Attributes:
        wallet_id (str):
        customer_id (str):
        deposit_address (str):
        symbol (str):
        chain (str):
        available_balance (str): a decimal string in the currency's units
        held_balance (str): a decimal string in the currency's units
        created_at (str): RFC 3339, UTC
    """

    wallet_id: str
    customer_id: str
    deposit_address: str
    symbol: str
    chain: str
    available_balance: str
    held_balance: str
    created_at: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        wallet_id = self.wallet_id

        customer_id = self.customer_id

        deposit_address = self.deposit_address

        symbol = self.symbol

        chain = self.chain

        available_balance = self.available_balance

        held_balance = self.held_balance

        created_at = self.created_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "wallet_id": wallet_id,
                "customer_id": customer_id,
                "deposit_address": deposit_address,
                "symbol": symbol,
                "chain": chain,
                "available_balance": available_balance,
                "held_balance": held_balance,
                "created_at": created_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        wallet_id = d.pop("wallet_id")

        customer_id = d.pop("customer_id")

        deposit_address = d.pop("deposit_address")

        symbol = d.pop("symbol")

        chain = d.pop("chain")

        available_balance = d.pop("available_balance")

        held_balance = d.pop("held_balance")

        created_at = d.pop("created_at")

        wallet = cls(
            wallet_id=wallet_id,
            customer_id=customer_id,
            deposit_address=deposit_address,
            symbol=symbol,
            chain=chain,
            available_balance=available_balance,
            held_balance=held_balance,
            created_at=created_at,
        )

        wallet.additional_properties = d
        return wallet

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

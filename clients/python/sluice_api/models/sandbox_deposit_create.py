from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

T = TypeVar("T", bound="SandboxDepositCreate")


@_attrs_define
class SandboxDepositCreate:
    """
    Attributes:
        virtual_account_id (str):
        amount (str): decimal string > 0 and <= 1e12; at most 6 decimals for stablecoins, 2 for fiat
    """

    virtual_account_id: str
    amount: str

    def to_dict(self) -> dict[str, Any]:
        virtual_account_id = self.virtual_account_id

        amount = self.amount

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "virtual_account_id": virtual_account_id,
                "amount": amount,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        virtual_account_id = d.pop("virtual_account_id")

        amount = d.pop("amount")

        sandbox_deposit_create = cls(
            virtual_account_id=virtual_account_id,
            amount=amount,
        )

        return sandbox_deposit_create

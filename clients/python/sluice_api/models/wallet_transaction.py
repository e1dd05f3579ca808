from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.wallet_transaction_direction import WalletTransactionDirection
from ..models.wallet_transaction_kind import WalletTransactionKind
from ..types import UNSET, Unset

T = TypeVar("T", bound="WalletTransaction")


@_attrs_define
class WalletTransaction:
    """
    Attributes:
        entry_id (str):
        kind (WalletTransactionKind):
        direction (WalletTransactionDirection):
        amount (str):
        balance_after (str):
        created_at (str):
        transfer_id (str | Unset):
        deposit_id (str | Unset):
    """

    entry_id: str
    kind: WalletTransactionKind
    direction: WalletTransactionDirection
    amount: str
    balance_after: str
    created_at: str
    transfer_id: str | Unset = UNSET
    deposit_id: str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        entry_id = self.entry_id

        kind = self.kind.value

        direction = self.direction.value

        amount = self.amount

        balance_after = self.balance_after

        created_at = self.created_at

        transfer_id = self.transfer_id

        deposit_id = self.deposit_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "entry_id": entry_id,
                "kind": kind,
                "direction": direction,
                "amount": amount,
                "balance_after": balance_after,
                "created_at": created_at,
            }
        )
        if transfer_id is not UNSET:
            field_dict["transfer_id"] = transfer_id
        if deposit_id is not UNSET:
            field_dict["deposit_id"] = deposit_id

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        entry_id = d.pop("entry_id")

        kind = WalletTransactionKind(d.pop("kind"))

        direction = WalletTransactionDirection(d.pop("direction"))

        amount = d.pop("amount")

        balance_after = d.pop("balance_after")

        created_at = d.pop("created_at")

        transfer_id = d.pop("transfer_id", UNSET)

        deposit_id = d.pop("deposit_id", UNSET)

        wallet_transaction = cls(
            entry_id=entry_id,
            kind=kind,
            direction=direction,
            amount=amount,
            balance_after=balance_after,
            created_at=created_at,
            transfer_id=transfer_id,
            deposit_id=deposit_id,
        )

        wallet_transaction.additional_properties = d
        return wallet_transaction

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

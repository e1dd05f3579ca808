from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.sandbox_deposit_received_state import SandboxDepositReceivedState

T = TypeVar("T", bound="SandboxDepositReceived")


@_attrs_define
class SandboxDepositReceived:
    """A simulated fiat deposit, credited 1:1 to the virtual account's wallet.

    Attributes:
        deposit_id (str):
        virtual_account_id (str):
        wallet_id (str):
        amount (str): a decimal string in the currency's units
        currency (str):
        credited_amount (str): a decimal string in the currency's units
        credited_currency (str):
        state (SandboxDepositReceivedState):
        created_at (str): RFC 3339, UTC
    """

    deposit_id: str
    virtual_account_id: str
    wallet_id: str
    amount: str
    currency: str
    credited_amount: str
    credited_currency: str
    state: SandboxDepositReceivedState
    created_at: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        deposit_id = self.deposit_id

        virtual_account_id = self.virtual_account_id

        wallet_id = self.wallet_id

        amount = self.amount

        currency = self.currency

        credited_amount = self.credited_amount

        credited_currency = self.credited_currency

        state = self.state.value

        created_at = self.created_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "deposit_id": deposit_id,
                "virtual_account_id": virtual_account_id,
                "wallet_id": wallet_id,
                "amount": amount,
                "currency": currency,
                "credited_amount": credited_amount,
                "credited_currency": credited_currency,
                "state": state,
                "created_at": created_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        deposit_id = d.pop("deposit_id")

        virtual_account_id = d.pop("virtual_account_id")

        wallet_id = d.pop("wallet_id")

        amount = d.pop("amount")

        currency = d.pop("currency")

        credited_amount = d.pop("credited_amount")

        credited_currency = d.pop("credited_currency")

        state = SandboxDepositReceivedState(d.pop("state"))

        created_at = d.pop("created_at")

        sandbox_deposit_received = cls(
            deposit_id=deposit_id,
            virtual_account_id=virtual_account_id,
            wallet_id=wallet_id,
            amount=amount,
            currency=currency,
            credited_amount=credited_amount,
            credited_currency=credited_currency,
            state=state,
            created_at=created_at,
        )

        sandbox_deposit_received.additional_properties = d
        return sandbox_deposit_received

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

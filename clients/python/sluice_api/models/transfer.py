from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.transfer_provider import TransferProvider
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.transfer_developer_fee import TransferDeveloperFee
    from ..models.transfer_party import TransferParty


T = TypeVar("T", bound="Transfer")


@_attrs_define
class Transfer:
    """A transfer or a payout; ``developer_fee`` and ``developer_fee_amount`` only when it
    carries a developer fee.

    Attributes:
        transfer_id (str):
        state (str):
        provider (TransferProvider):
        source (TransferParty): A transfer's source or destination as it was requested (codes upper-case); a field the
                request left out is absent.
        destination (TransferParty): A transfer's source or destination as it was requested (codes upper-case); a field
            the
                request left out is absent.
        amount (str): a decimal string in the currency's units
        currency (str):
        idempotency_key (str):
        created_at (str): RFC 3339, UTC
        updated_at (str): RFC 3339, UTC
        developer_fee (TransferDeveloperFee | Unset): The developer fee as requested; the percentage as a decimal
            string.
        developer_fee_amount (str | Unset): a decimal string in the currency's units
    """

    transfer_id: str
    state: str
    provider: TransferProvider
    source: TransferParty
    destination: TransferParty
    amount: str
    currency: str
    idempotency_key: str
    created_at: str
    updated_at: str
    developer_fee: TransferDeveloperFee | Unset = UNSET
    developer_fee_amount: str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        transfer_id = self.transfer_id

        state = self.state

        provider = self.provider.value

        source = self.source.to_dict()

        destination = self.destination.to_dict()

        amount = self.amount

        currency = self.currency

        idempotency_key = self.idempotency_key

        created_at = self.created_at

        updated_at = self.updated_at

        developer_fee: dict[str, Any] | Unset = UNSET
        if not isinstance(self.developer_fee, Unset):
            developer_fee = self.developer_fee.to_dict()

        developer_fee_amount = self.developer_fee_amount

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "transfer_id": transfer_id,
                "state": state,
                "provider": provider,
                "source": source,
                "destination": destination,
                "amount": amount,
                "currency": currency,
                "idempotency_key": idempotency_key,
                "created_at": created_at,
                "updated_at": updated_at,
            }
        )
        if developer_fee is not UNSET:
            field_dict["developer_fee"] = developer_fee
        if developer_fee_amount is not UNSET:
            field_dict["developer_fee_amount"] = developer_fee_amount

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.transfer_developer_fee import TransferDeveloperFee  # noqa: PLC0415
        from ..models.transfer_party import TransferParty  # noqa: PLC0415

        d = dict(src_dict)
        transfer_id = d.pop("transfer_id")

        state = d.pop("state")

        provider = TransferProvider(d.pop("provider"))

        source = TransferParty.from_dict(d.pop("source"))

        destination = TransferParty.from_dict(d.pop("destination"))

        amount = d.pop("amount")

        currency = d.pop("currency")

        idempotency_key = d.pop("idempotency_key")

        created_at = d.pop("created_at")

        updated_at = d.pop("updated_at")

        _developer_fee = d.pop("developer_fee", UNSET)
        developer_fee: TransferDeveloperFee | Unset
        if isinstance(_developer_fee, Unset):
            developer_fee = UNSET
        else:
            developer_fee = TransferDeveloperFee.from_dict(_developer_fee)

        developer_fee_amount = d.pop("developer_fee_amount", UNSET)

        transfer = cls(
            transfer_id=transfer_id,
            state=state,
            provider=provider,
            source=source,
            destination=destination,
            amount=amount,
            currency=currency,
            idempotency_key=idempotency_key,
            created_at=created_at,
            updated_at=updated_at,
            developer_fee=developer_fee,
            developer_fee_amount=developer_fee_amount,
        )

        transfer.additional_properties = d
        return transfer

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

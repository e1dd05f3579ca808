from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.transfer_destination import TransferDestination
    from ..models.transfer_developer_fee import TransferDeveloperFee
    from ..models.transfer_source import TransferSource


T = TypeVar("T", bound="Transfer")


@_attrs_define
class Transfer:
    """
    Attributes:
        transfer_id (str):
        state (str):
        provider (str | Unset):
        amount (str | Unset):
        currency (str | Unset):
        idempotency_key (str | Unset):
        developer_fee (TransferDeveloperFee | Unset):
        developer_fee_amount (str | Unset):
        source (TransferSource | Unset):
        destination (TransferDestination | Unset):
        created_at (str | Unset):
        updated_at (str | Unset):
    """

    transfer_id: str
    state: str
    provider: str | Unset = UNSET
    amount: str | Unset = UNSET
    currency: str | Unset = UNSET
    idempotency_key: str | Unset = UNSET
    developer_fee: TransferDeveloperFee | Unset = UNSET
    developer_fee_amount: str | Unset = UNSET
    source: TransferSource | Unset = UNSET
    destination: TransferDestination | Unset = UNSET
    created_at: str | Unset = UNSET
    updated_at: str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        transfer_id = self.transfer_id

        state = self.state

        provider = self.provider

        amount = self.amount

        currency = self.currency

        idempotency_key = self.idempotency_key

        developer_fee: dict[str, Any] | Unset = UNSET
        if not isinstance(self.developer_fee, Unset):
            developer_fee = self.developer_fee.to_dict()

        developer_fee_amount = self.developer_fee_amount

        source: dict[str, Any] | Unset = UNSET
        if not isinstance(self.source, Unset):
            source = self.source.to_dict()

        destination: dict[str, Any] | Unset = UNSET
        if not isinstance(self.destination, Unset):
            destination = self.destination.to_dict()

        created_at = self.created_at

        updated_at = self.updated_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "transfer_id": transfer_id,
                "state": state,
            }
        )
        if provider is not UNSET:
            field_dict["provider"] = provider
        if amount is not UNSET:
            field_dict["amount"] = amount
        if currency is not UNSET:
            field_dict["currency"] = currency
        if idempotency_key is not UNSET:
            field_dict["idempotency_key"] = idempotency_key
        if developer_fee is not UNSET:
            field_dict["developer_fee"] = developer_fee
        if developer_fee_amount is not UNSET:
            field_dict["developer_fee_amount"] = developer_fee_amount
        if source is not UNSET:
            field_dict["source"] = source
        if destination is not UNSET:
            field_dict["destination"] = destination
        if created_at is not UNSET:
            field_dict["created_at"] = created_at
        if updated_at is not UNSET:
            field_dict["updated_at"] = updated_at

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.transfer_destination import TransferDestination  # noqa: PLC0415
        from ..models.transfer_developer_fee import TransferDeveloperFee  # noqa: PLC0415
        from ..models.transfer_source import TransferSource  # noqa: PLC0415

        d = dict(src_dict)
        transfer_id = d.pop("transfer_id")

        state = d.pop("state")

        provider = d.pop("provider", UNSET)

        amount = d.pop("amount", UNSET)

        currency = d.pop("currency", UNSET)

        idempotency_key = d.pop("idempotency_key", UNSET)

        _developer_fee = d.pop("developer_fee", UNSET)
        developer_fee: TransferDeveloperFee | Unset
        if isinstance(_developer_fee, Unset):
            developer_fee = UNSET
        else:
            developer_fee = TransferDeveloperFee.from_dict(_developer_fee)

        developer_fee_amount = d.pop("developer_fee_amount", UNSET)

        _source = d.pop("source", UNSET)
        source: TransferSource | Unset
        if isinstance(_source, Unset):
            source = UNSET
        else:
            source = TransferSource.from_dict(_source)

        _destination = d.pop("destination", UNSET)
        destination: TransferDestination | Unset
        if isinstance(_destination, Unset):
            destination = UNSET
        else:
            destination = TransferDestination.from_dict(_destination)

        created_at = d.pop("created_at", UNSET)

        updated_at = d.pop("updated_at", UNSET)

        transfer = cls(
            transfer_id=transfer_id,
            state=state,
            provider=provider,
            amount=amount,
            currency=currency,
            idempotency_key=idempotency_key,
            developer_fee=developer_fee,
            developer_fee_amount=developer_fee_amount,
            source=source,
            destination=destination,
            created_at=created_at,
            updated_at=updated_at,
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

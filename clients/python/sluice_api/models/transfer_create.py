from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.developer_fee_in import DeveloperFeeIn
    from ..models.party_in import PartyIn


T = TypeVar("T", bound="TransferCreate")


@_attrs_define
class TransferCreate:
    """
    Attributes:
        source (PartyIn):
        destination (PartyIn):
        idempotency_key (str): must equal the request's Idempotency-Key header (else 400 naming idempotency_key)
        developer_fee (DeveloperFeeIn | None | Unset):
    """

    source: PartyIn
    destination: PartyIn
    idempotency_key: str
    developer_fee: DeveloperFeeIn | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.developer_fee_in import DeveloperFeeIn  # noqa: PLC0415

        source = self.source.to_dict()

        destination = self.destination.to_dict()

        idempotency_key = self.idempotency_key

        developer_fee: dict[str, Any] | None | Unset
        if isinstance(self.developer_fee, Unset):
            developer_fee = UNSET
        elif isinstance(self.developer_fee, DeveloperFeeIn):
            developer_fee = self.developer_fee.to_dict()
        else:
            developer_fee = self.developer_fee

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "source": source,
                "destination": destination,
                "idempotency_key": idempotency_key,
            }
        )
        if developer_fee is not UNSET:
            field_dict["developer_fee"] = developer_fee

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.developer_fee_in import DeveloperFeeIn  # noqa: PLC0415
        from ..models.party_in import PartyIn  # noqa: PLC0415

        d = dict(src_dict)
        source = PartyIn.from_dict(d.pop("source"))

        destination = PartyIn.from_dict(d.pop("destination"))

        idempotency_key = d.pop("idempotency_key")

        def _parse_developer_fee(data: object) -> DeveloperFeeIn | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                developer_fee_type_0 = DeveloperFeeIn.from_dict(data)

                return developer_fee_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(DeveloperFeeIn | None | Unset, data)

        developer_fee = _parse_developer_fee(d.pop("developer_fee", UNSET))

        transfer_create = cls(
            source=source,
            destination=destination,
            idempotency_key=idempotency_key,
            developer_fee=developer_fee,
        )

        return transfer_create

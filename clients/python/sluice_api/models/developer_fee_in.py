from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="DeveloperFeeIn")


@_attrs_define
class DeveloperFeeIn:
    """
    Attributes:
        percentage (float | None | str | Unset):
        flat_amount (None | str | Unset):
    """

    percentage: float | None | str | Unset = UNSET
    flat_amount: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        percentage: float | None | str | Unset
        if isinstance(self.percentage, Unset):
            percentage = UNSET
        else:
            percentage = self.percentage

        flat_amount: None | str | Unset
        if isinstance(self.flat_amount, Unset):
            flat_amount = UNSET
        else:
            flat_amount = self.flat_amount

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if percentage is not UNSET:
            field_dict["percentage"] = percentage
        if flat_amount is not UNSET:
            field_dict["flat_amount"] = flat_amount

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_percentage(data: object) -> float | None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | str | Unset, data)

        percentage = _parse_percentage(d.pop("percentage", UNSET))

        def _parse_flat_amount(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        flat_amount = _parse_flat_amount(d.pop("flat_amount", UNSET))

        developer_fee_in = cls(
            percentage=percentage,
            flat_amount=flat_amount,
        )

        return developer_fee_in

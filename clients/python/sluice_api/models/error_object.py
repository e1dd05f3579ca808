from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.error_object_code import ErrorObjectCode
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.error_object_details import ErrorObjectDetails


T = TypeVar("T", bound="ErrorObject")


@_attrs_define
class ErrorObject:
    """
    Attributes:
        code (ErrorObjectCode):
        message (str):
        details (ErrorObjectDetails | Unset):
    """

    code: ErrorObjectCode
    message: str
    details: ErrorObjectDetails | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        code = self.code.value

        message = self.message

        details: dict[str, Any] | Unset = UNSET
        if not isinstance(self.details, Unset):
            details = self.details.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "code": code,
                "message": message,
            }
        )
        if details is not UNSET:
            field_dict["details"] = details

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.error_object_details import ErrorObjectDetails  # noqa: PLC0415

        d = dict(src_dict)
        code = ErrorObjectCode(d.pop("code"))

        message = d.pop("message")

        _details = d.pop("details", UNSET)
        details: ErrorObjectDetails | Unset
        if isinstance(_details, Unset):
            details = UNSET
        else:
            details = ErrorObjectDetails.from_dict(_details)

        error_object = cls(
            code=code,
            message=message,
            details=details,
        )

        error_object.additional_properties = d
        return error_object

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

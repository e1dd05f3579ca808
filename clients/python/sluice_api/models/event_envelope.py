from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.event_envelope_data import EventEnvelopeData


T = TypeVar("T", bound="EventEnvelope")


@_attrs_define
class EventEnvelope:
    """Exactly the body delivered to webhook endpoints for this event (docs/guides/webhooks.md, "Events").

    Attributes:
        id (str):
        type_ (str):
        created_at (str):
        api_version (str):
        mode (str):
        sequence (int): strictly increasing per tenant and mode, in the order events were stored; may skip numbers
        data (EventEnvelopeData):
    """

    id: str
    type_: str
    created_at: str
    api_version: str
    mode: str
    sequence: int
    data: EventEnvelopeData
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        type_ = self.type_

        created_at = self.created_at

        api_version = self.api_version

        mode = self.mode

        sequence = self.sequence

        data = self.data.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "type": type_,
                "created_at": created_at,
                "api_version": api_version,
                "mode": mode,
                "sequence": sequence,
                "data": data,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.event_envelope_data import EventEnvelopeData  # noqa: PLC0415

        d = dict(src_dict)
        id = d.pop("id")

        type_ = d.pop("type")

        created_at = d.pop("created_at")

        api_version = d.pop("api_version")

        mode = d.pop("mode")

        sequence = d.pop("sequence")

        data = EventEnvelopeData.from_dict(d.pop("data"))

        event_envelope = cls(
            id=id,
            type_=type_,
            created_at=created_at,
            api_version=api_version,
            mode=mode,
            sequence=sequence,
            data=data,
        )

        event_envelope.additional_properties = d
        return event_envelope

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

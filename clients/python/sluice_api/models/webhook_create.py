from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="WebhookCreate")


@_attrs_define
class WebhookCreate:
    """
    Attributes:
        endpoint_url (str):
        enabled_events (list[str] | None | Unset):
    """

    endpoint_url: str
    enabled_events: list[str] | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        endpoint_url = self.endpoint_url

        enabled_events: list[str] | None | Unset
        if isinstance(self.enabled_events, Unset):
            enabled_events = UNSET
        elif isinstance(self.enabled_events, list):
            enabled_events = self.enabled_events

        else:
            enabled_events = self.enabled_events

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "endpoint_url": endpoint_url,
            }
        )
        if enabled_events is not UNSET:
            field_dict["enabled_events"] = enabled_events

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        endpoint_url = d.pop("endpoint_url")

        def _parse_enabled_events(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                enabled_events_type_0 = cast(list[str], data)

                return enabled_events_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        enabled_events = _parse_enabled_events(d.pop("enabled_events", UNSET))

        webhook_create = cls(
            endpoint_url=endpoint_url,
            enabled_events=enabled_events,
        )

        return webhook_create

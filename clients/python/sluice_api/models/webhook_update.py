from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..models.webhook_update_status_type_0 import WebhookUpdateStatusType0
from ..types import UNSET, Unset

T = TypeVar("T", bound="WebhookUpdate")


@_attrs_define
class WebhookUpdate:
    """At least one field; a field left out (or null) is kept. A new URL is vetted as at
    creation; ``disabled`` stops deliveries at once (pending ones end), ``enabled`` resumes.

    Attributes:
        endpoint_url (None | str | Unset):
        enabled_events (list[str] | None | Unset):
        status (None | Unset | WebhookUpdateStatusType0):
    """

    endpoint_url: None | str | Unset = UNSET
    enabled_events: list[str] | None | Unset = UNSET
    status: None | Unset | WebhookUpdateStatusType0 = UNSET

    def to_dict(self) -> dict[str, Any]:
        endpoint_url: None | str | Unset
        if isinstance(self.endpoint_url, Unset):
            endpoint_url = UNSET
        else:
            endpoint_url = self.endpoint_url

        enabled_events: list[str] | None | Unset
        if isinstance(self.enabled_events, Unset):
            enabled_events = UNSET
        elif isinstance(self.enabled_events, list):
            enabled_events = self.enabled_events

        else:
            enabled_events = self.enabled_events

        status: None | str | Unset
        if isinstance(self.status, Unset):
            status = UNSET
        elif isinstance(self.status, WebhookUpdateStatusType0):
            status = self.status.value
        else:
            status = self.status

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if endpoint_url is not UNSET:
            field_dict["endpoint_url"] = endpoint_url
        if enabled_events is not UNSET:
            field_dict["enabled_events"] = enabled_events
        if status is not UNSET:
            field_dict["status"] = status

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_endpoint_url(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        endpoint_url = _parse_endpoint_url(d.pop("endpoint_url", UNSET))

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

        def _parse_status(data: object) -> None | Unset | WebhookUpdateStatusType0:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                status_type_0 = WebhookUpdateStatusType0(data)

                return status_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | WebhookUpdateStatusType0, data)

        status = _parse_status(d.pop("status", UNSET))

        webhook_update = cls(
            endpoint_url=endpoint_url,
            enabled_events=enabled_events,
            status=status,
        )

        return webhook_update

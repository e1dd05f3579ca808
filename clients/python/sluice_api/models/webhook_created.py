from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.webhook_created_status import WebhookCreatedStatus

T = TypeVar("T", bound="WebhookCreated")


@_attrs_define
class WebhookCreated:
    """A new endpoint with its signing secret, shown only in this answer.

    Attributes:
        webhook_id (str):
        endpoint_url (str):
        status (WebhookCreatedStatus):
        disabled_reason (None | str): why it is disabled: failing_without_success (disabled automatically) or
            disabled_by_partner; null while enabled
        created_at (str): RFC 3339, UTC
        enabled_events (list[str]): the event types delivered to it (every type unless narrowed)
        signing_secret (str):
    """

    webhook_id: str
    endpoint_url: str
    status: WebhookCreatedStatus
    disabled_reason: None | str
    created_at: str
    enabled_events: list[str]
    signing_secret: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        webhook_id = self.webhook_id

        endpoint_url = self.endpoint_url

        status = self.status.value

        disabled_reason: None | str
        disabled_reason = self.disabled_reason

        created_at = self.created_at

        enabled_events = self.enabled_events

        signing_secret = self.signing_secret

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "webhook_id": webhook_id,
                "endpoint_url": endpoint_url,
                "status": status,
                "disabled_reason": disabled_reason,
                "created_at": created_at,
                "enabled_events": enabled_events,
                "signing_secret": signing_secret,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        webhook_id = d.pop("webhook_id")

        endpoint_url = d.pop("endpoint_url")

        status = WebhookCreatedStatus(d.pop("status"))

        def _parse_disabled_reason(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        disabled_reason = _parse_disabled_reason(d.pop("disabled_reason"))

        created_at = d.pop("created_at")

        enabled_events = cast(list[str], d.pop("enabled_events"))

        signing_secret = d.pop("signing_secret")

        webhook_created = cls(
            webhook_id=webhook_id,
            endpoint_url=endpoint_url,
            status=status,
            disabled_reason=disabled_reason,
            created_at=created_at,
            enabled_events=enabled_events,
            signing_secret=signing_secret,
        )

        webhook_created.additional_properties = d
        return webhook_created

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

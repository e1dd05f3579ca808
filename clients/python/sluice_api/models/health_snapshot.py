from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.health_snapshot_mode import HealthSnapshotMode

if TYPE_CHECKING:
    from ..models.health_snapshot_white_label_type_0 import HealthSnapshotWhiteLabelType0


T = TypeVar("T", bound="HealthSnapshot")


@_attrs_define
class HealthSnapshot:
    """
    Attributes:
        request_id (str):
        route (str):
        tenant_id (str):
        tenant_name (str):
        mode (HealthSnapshotMode):
        rate_limit_per_minute (int):
        remaining (int):
        reset_at (str):
        gateway (str):
        white_label (HealthSnapshotWhiteLabelType0 | None):
    """

    request_id: str
    route: str
    tenant_id: str
    tenant_name: str
    mode: HealthSnapshotMode
    rate_limit_per_minute: int
    remaining: int
    reset_at: str
    gateway: str
    white_label: HealthSnapshotWhiteLabelType0 | None
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.health_snapshot_white_label_type_0 import HealthSnapshotWhiteLabelType0  # noqa: PLC0415

        request_id = self.request_id

        route = self.route

        tenant_id = self.tenant_id

        tenant_name = self.tenant_name

        mode = self.mode.value

        rate_limit_per_minute = self.rate_limit_per_minute

        remaining = self.remaining

        reset_at = self.reset_at

        gateway = self.gateway

        white_label: dict[str, Any] | None
        if isinstance(self.white_label, HealthSnapshotWhiteLabelType0):
            white_label = self.white_label.to_dict()
        else:
            white_label = self.white_label

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "request_id": request_id,
                "route": route,
                "tenant_id": tenant_id,
                "tenant_name": tenant_name,
                "mode": mode,
                "rate_limit_per_minute": rate_limit_per_minute,
                "remaining": remaining,
                "reset_at": reset_at,
                "gateway": gateway,
                "white_label": white_label,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.health_snapshot_white_label_type_0 import HealthSnapshotWhiteLabelType0  # noqa: PLC0415

        d = dict(src_dict)
        request_id = d.pop("request_id")

        route = d.pop("route")

        tenant_id = d.pop("tenant_id")

        tenant_name = d.pop("tenant_name")

        mode = HealthSnapshotMode(d.pop("mode"))

        rate_limit_per_minute = d.pop("rate_limit_per_minute")

        remaining = d.pop("remaining")

        reset_at = d.pop("reset_at")

        gateway = d.pop("gateway")

        def _parse_white_label(data: object) -> HealthSnapshotWhiteLabelType0 | None:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                white_label_type_0 = HealthSnapshotWhiteLabelType0.from_dict(data)

                return white_label_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(HealthSnapshotWhiteLabelType0 | None, data)

        white_label = _parse_white_label(d.pop("white_label"))

        health_snapshot = cls(
            request_id=request_id,
            route=route,
            tenant_id=tenant_id,
            tenant_name=tenant_name,
            mode=mode,
            rate_limit_per_minute=rate_limit_per_minute,
            remaining=remaining,
            reset_at=reset_at,
            gateway=gateway,
            white_label=white_label,
        )

        health_snapshot.additional_properties = d
        return health_snapshot

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

"""The white-label branding object (docs/guides/money.md, "Onboarding a customer through a
signup link"), shared by admin (which validates and approves it) and the gateway (which
validates it again before the signup screen shows it)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from common.validation import SPACE

HexColor = Annotated[str, msgspec.Meta(pattern=r"^#[0-9A-F]{6}$(?!\n)")]
Email = Annotated[
    str, msgspec.Meta(pattern=rf"^[^@{SPACE}]+@[^@{SPACE}]+\.[^@{SPACE}]+$(?!\n)", max_length=254)
]
HttpsUri = Annotated[
    str, msgspec.Meta(pattern=rf"^https://[^{SPACE}/$.?#][^{SPACE}]*$(?!\n)", max_length=2048)
]
Uri = Annotated[str, msgspec.Meta(pattern=rf"^https?://[^{SPACE}/$.?#][^{SPACE}]*$(?!\n)", max_length=2048)]
Hostname = Annotated[
    str,
    msgspec.Meta(
        pattern=r"^(?=.{1,253}$(?!\n))([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}$(?!\n)"
    ),
]


class WhiteLabel(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    enabled: Literal[True]
    app_name: Annotated[str, msgspec.Meta(min_length=1, max_length=80)] | None = None
    logo_url: HttpsUri | None = None
    background_image_url: Uri | None = None
    primary_color: HexColor | None = None
    accent_color: HexColor | None = None
    support_email: Email | None = None
    custom_domain: Hostname | None = None


def valid_white_label(raw: Any) -> WhiteLabel | None:
    """The branding if ``raw`` validates exactly, else None (the default look)."""
    if not isinstance(raw, dict):
        return None
    try:
        return msgspec.convert(raw, type=WhiteLabel)
    except msgspec.ValidationError:
        return None
